import { Effect } from "effect"
import { grantAccessTo } from "./grants.js"
import { alphaTools, commonTools, startBackend } from "./mcp-backends.js"
import { jsonRpcOf, postToolsList } from "./mcp-clients.js"
import { inGateway, type OAuthGateway } from "./oauth-gateway.js"
import { mintSessionToken } from "./oauth-session.js"

/**
 * What the tests of managed tool sources share: a real MCP backend for the scope (`alpha` with its own
 * tools, any other name with the common `echo` and `search`), and a user granted every tool of some
 * endpoints whose `/mcp` tools/list the test reads again after each change.
 */
export const backendServer = (name: string) =>
  Effect.acquireRelease(
    Effect.promise(() => startBackend(name, name === "alpha" ? alphaTools : (server) => commonTools(server, name))),
    (started) => Effect.promise(() => started.stop())
  )

/** A user granted every tool of `endpoints`; the effect answers the tool names `/mcp` lists for them now, sorted. */
export const mcpUser = (gateway: OAuthGateway, endpoints: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { token, userId } = yield* inGateway(gateway)(
      mintSessionToken({ issuer: gateway.issuer, audience: gateway.mcpUrl })
    )
    yield* inGateway(gateway)(
      grantAccessTo(
        userId,
        endpoints.map((endpoint) => ({ endpoint_id: endpoint, tools: ["*"] }))
      )
    )
    return Effect.promise(async () => {
      const answer = await jsonRpcOf(await postToolsList(gateway.mcpUrl, token))
      const result = answer["result"] as { tools: Array<{ name: string }> }
      return result.tools.map((tool) => tool.name).sort()
    })
  })
