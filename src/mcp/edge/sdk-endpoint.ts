import { type AuthInfo, createMcpHandler } from "@modelcontextprotocol/server"
import { Context, Effect, Layer, Runtime } from "effect"
import { Config } from "../../config/service.js"
import { ToolCalls } from "../calls/tool-calls.js"
import { Backends } from "../upstream/backends.js"
import { makeServerFactory, type RequestGrant } from "./server-factory.js"

/**
 * The SDK's stateless Streamable HTTP handler for one generation: `createMcpHandler` over the per-request
 * server factory. It serves 2026-07-28 requests per request and 2025-era ones through the stateless
 * legacy fallback; `subscriptions/listen` streams hear about catalog changes. Closed with the generation.
 */
export class McpEndpoint extends Context.Tag("gateway/McpEndpoint")<
  McpEndpoint,
  { readonly serve: (request: Request, parsedBody: unknown, grant: RequestGrant) => Promise<Response> }
>() {}

export const McpEndpointLive = Layer.scoped(
  McpEndpoint,
  Effect.gen(function* () {
    const { config } = yield* Config
    const backends = yield* Backends
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const grants = new WeakMap<AuthInfo, RequestGrant>()
    const toolCalls = yield* ToolCalls
    const factory = makeServerFactory({
      slots: backends.slots,
      index: backends.index,
      reportFailure: backends.reportFailure,
      wanted: backends.wanted,
      nextChannel: backends.nextChannel,
      pageSize: config.catalog.page_size,
      grants,
      toolCalls
    })
    const handler = createMcpHandler(factory, {
      // Rejections are answered to the client already; the log line helps whoever debugs the client.
      onerror: (error) => runFork(Effect.logDebug("mcp request rejected", error.message))
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => handler.close()))
    backends.onIndexChange(() => {
      handler.notify.toolsChanged()
      handler.notify.promptsChanged()
      handler.notify.resourcesChanged()
    })
    return {
      serve: (request, parsedBody, grant) => {
        // The token itself stays out: handlers get the caller through the grant, never the credential.
        const { caller } = grant.view
        const authInfo: AuthInfo = {
          token: "",
          clientId: caller.clientId ?? "",
          scopes: [...caller.scopes],
          expiresAt: caller.expiresAt
        }
        grants.set(authInfo, grant)
        return handler.fetch(request, { authInfo, parsedBody })
      }
    }
  })
)
