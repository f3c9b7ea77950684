import type { CallToolResult, CompleteRequest } from "@modelcontextprotocol/client"
import {
  type AuthInfo,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
  type McpRequestContext,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerCapabilities,
  type ServerContext
} from "@modelcontextprotocol/server"
import type { Context, Tracer } from "effect"
import { isRecord } from "../../json.js"
import type { View } from "../../policy/view.js"
import { abortSignalOf } from "../../runtime/cancellation.js"
import { version } from "../../version.js"
import { AccessWithdrawn } from "../calls/in-flight.js"
import { isLoggingLevel, type LoggingLevel } from "../calls/log-levels.js"
import type { ToolCalls } from "../calls/tool-calls.js"
import { withoutReservedMeta } from "../catalog/backend-catalog.js"
import { type CatalogIndex, routeUri } from "../catalog/index.js"
import { exposeContentUris, exposeUri, isAmbiguousUri, namingOf } from "../catalog/naming.js"
import { pageOf } from "../catalog/pagination.js"
import { shortText } from "../echo.js"
import type { Backends } from "../upstream/backends.js"
import { type ForwardTarget, forward as forwardWith, progressOf } from "../upstream/forward.js"
import type { BackendSlot } from "../upstream/slot.js"

/** What the /mcp route learned about a request before handing it to the SDK: the caller's view. */
export interface RequestGrant {
  readonly view: View
  readonly deadline: number
  /** The request's span, when tracing is on. */
  readonly span?: Tracer.AnySpan | undefined
}

export interface FactoryDeps {
  readonly slots: ReadonlyArray<BackendSlot>
  readonly index: () => CatalogIndex
  readonly reportFailure: (backend: number, reason: string) => void
  /** `Backends.wanted`: a request found the backend unavailable. */
  readonly wanted: (backend: number) => void
  /** `Backends.nextChannel`: a request whose backend forgot the session waits for the new one. */
  readonly nextChannel: Context.Tag.Service<Backends>["nextChannel"]
  readonly pageSize: number
  /** Keyed by the AuthInfo object the route passes to `handler.fetch`, which the SDK hands back unchanged. */
  readonly grants: WeakMap<AuthInfo, RequestGrant>
  readonly toolCalls: Context.Tag.Service<ToolCalls>
}

const unknown = (what: string, key: string) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown ${what}: ${shortText(key)}`)
const notFound = (uri: string) =>
  new ProtocolError(ProtocolErrorCode.ResourceNotFound, `Resource not found: ${shortText(uri)}`)
const published = (uri: string) =>
  new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Resource URI published by more than one backend, so the gateway reads it from none: ${shortText(uri)}`
  )
const ambiguous = new ProtocolError(
  ProtocolErrorCode.InvalidParams,
  "Invalid params for resources/read: the URI has dot segments, backslashes, encoded dots or slashes, or control characters"
)

/**
 * The per-request MCP server: where the caller's identity meets policy. A low-level `Server` whose
 * handlers read the generation's precomputed index through this caller's View: nothing is registered
 * per tool and no schema is compiled per request, and nothing is decided here — every answer asks the
 * View, and `tools/call` goes to ToolCalls.
 */
export const makeServerFactory = (deps: FactoryDeps) => {
  return (context: McpRequestContext): Server => {
    const grant = context.authInfo === undefined ? undefined : deps.grants.get(context.authInfo)
    // The route verifies every request before the SDK sees it; no grant means a wiring bug, so deny.
    if (grant === undefined) throw new Error("MCP request without a verified caller")
    const index = deps.index()
    const { view } = grant
    const target = (backend: number): ForwardTarget => ({
      slot: deps.slots[backend]!,
      deadline: grant.deadline,
      reportFailure: (reason) => deps.reportFailure(backend, reason),
      wanted: () => deps.wanted(backend),
      reconnected: (previous, signal) =>
        deps.nextChannel(backend, previous, grant.deadline, signal).then((next) => next !== undefined)
    })
    // A prompt or resource read the policy stops allowing while it runs is cancelled (AccessWithdrawn).
    const forward = <T>(
      backend: number,
      ctx: ServerContext,
      recheck: (view: View) => boolean,
      send: Parameters<typeof forwardWith<T>>[3]
    ) =>
      deps.toolCalls.inFlight
        .track(
          view.caller,
          ctx.mcpReq.id,
          ctx.mcpReq.signal,
          (signal) => forwardWith(target(backend), progressOf(ctx), abortSignalOf(signal), send),
          recheck
        )
        .catch((failure: unknown) => {
          throw failure instanceof AccessWithdrawn
            ? new ProtocolError(ProtocolErrorCode.InternalError, failure.message)
            : failure
        })
    const seesCompletions = (backend: number) =>
      index.completions[backend] === true &&
      (view.readsResources(backend) ||
        index.prompts.some((entry) => entry.backend === backend && view.seesPrompt(entry)))
    const completions = index.completions.some((_, backend) => seesCompletions(backend))
    // List changes reach a caller only on a 2026-07-28 `subscriptions/listen` stream, and only when it may
    // subscribe; a 2025-era caller has no channel for them (GET /mcp is 405: no standalone stream).
    const listChanged = context.era === "modern" && view.subscribes
    const capabilities: ServerCapabilities = {
      // Log messages a backend sends during a tools/call are relayed on that call's stream (docs/mcp.md).
      logging: {},
      tools: { listChanged },
      prompts: { listChanged },
      resources: { listChanged },
      ...(completions ? { completions: {} } : {})
    }
    const server = new Server({ name: "gateway", version }, { capabilities })

    server.setRequestHandler("tools/list", (request) => {
      const page = pageOf(
        index.tools,
        (tool) => view.seesTool(tool),
        request.params?.cursor,
        deps.pageSize,
        (entry) => entry.item
      )
      return { tools: [...page.items], ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }) }
    })
    // ToolCalls owns tools/call on both paths; this handler only translates its outcome for the SDK.
    server.setRequestHandler("tools/call", async (request, ctx) => {
      const onProgress = progressOf(ctx)
      // The SDK applies the caller's level (2026-07-28: the request's envelope; 2025: all, no sessions here).
      const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined
      const logLevel = envelope?.[LOG_LEVEL_META_KEY]
      const outcome = await deps.toolCalls.call({
        view,
        name: request.params.name,
        arguments: request.params.arguments,
        requestId: ctx.mcpReq.id,
        signal: ctx.mcpReq.signal,
        deadline: grant.deadline,
        ...(grant.span === undefined ? {} : { span: grant.span }),
        ...(onProgress === undefined ? {} : { onProgress }),
        onLog: (message) => {
          ctx.mcpReq
            .log(message["level"] as LoggingLevel, message["data"], stringOrUndefined(message["logger"]))
            .catch(() => {})
        },
        // A 2025-era caller gets the whole log (`debug`), also from a 2026-07-28 backend, which logs only
        // at a level the request names.
        ...(isLoggingLevel(logLevel) ? { logLevel } : context.era === "legacy" ? { logLevel: "debug" as const } : {}),
        // 2026-07-28: an `input_required` result goes back to the caller, and its retry to the backend.
        ...(context.era === "modern"
          ? {
              multiRound: {
                inputResponses: ctx.mcpReq.inputResponses,
                requestState: stringOrUndefined(ctx.mcpReq.requestState()),
                clientCapabilities: declaredCapabilities(envelope)
              }
            }
          : {})
      })
      if (outcome._tag === "Result") {
        // The SDK writes the result after this returns, out of sight here: what its answer held is given back now.
        outcome.release?.()
        return outcome.result as CallToolResult
      }
      if (outcome._tag === "Error")
        throw new ProtocolError(outcome.error.code, outcome.error.message, outcome.error.data)
      throw new ProtocolError(ProtocolErrorCode.InternalError, "The call was cancelled.")
    })
    server.setRequestHandler("prompts/list", (request) => {
      const page = pageOf(
        index.prompts,
        (entry) => view.seesPrompt(entry),
        request.params?.cursor,
        deps.pageSize,
        (entry) => entry.item
      )
      return { prompts: [...page.items], ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }) }
    })
    server.setRequestHandler("prompts/get", async (request, ctx) => {
      const entry = index.promptByName.get(request.params.name)
      if (entry === undefined || !view.seesPrompt(entry)) throw unknown("prompt", request.params.name)
      const { arguments: args } = request.params
      const result = await forward(
        entry.backend,
        ctx,
        (next) => next.seesPrompt(entry),
        (client, options) =>
          client.getPrompt({ name: entry.original, ...(args === undefined ? {} : { arguments: args }) }, options)
      )
      const naming = namingOf(deps.slots[entry.backend]!.config)
      const messages = result.messages.map((message) => ({
        ...message,
        content: exposeContentUris(naming, message.content)
      }))
      return withoutReservedMeta({ ...result, messages })
    })
    server.setRequestHandler("resources/list", (request) => {
      const page = pageOf(
        index.resources,
        (entry) => view.readsResources(entry.backend),
        request.params?.cursor,
        deps.pageSize,
        (entry) => entry.item
      )
      return { resources: [...page.items], ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }) }
    })
    server.setRequestHandler("resources/templates/list", (request) => {
      const page = pageOf(
        index.templates,
        (entry) => view.readsResources(entry.backend),
        request.params?.cursor,
        deps.pageSize,
        (entry) => entry.item
      )
      return {
        resourceTemplates: [...page.items],
        ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor })
      }
    })
    server.setRequestHandler("resources/read", async (request, ctx) => {
      // Template-expanded URIs are not listed: any URI under a readable backend's prefix goes to that
      // backend; only backends this caller may read are considered, and a URI several publish goes nowhere.
      const route = routeUri(index, request.params.uri, (backend) => view.readsResources(backend))
      if (route._tag === "Collision") throw published(request.params.uri)
      if (route._tag === "None") throw notFound(request.params.uri)
      // Never forwarded: a backend might resolve `..` against something the caller was not meant to reach.
      if (isAmbiguousUri(route.original)) throw ambiguous
      const { backend } = route
      const result = await forward(
        backend,
        ctx,
        (next) => next.readsResources(backend),
        (client, options) => client.readResource({ uri: route.original }, { ...options, cacheMode: "bypass" })
      )
      const naming = namingOf(deps.slots[backend]!.config)
      return withoutReservedMeta({
        ...result,
        contents: result.contents.map((content) => ({ ...content, uri: exposeUri(naming, content.uri) }))
      })
    })
    if (completions) {
      server.setRequestHandler("completion/complete", async (request, ctx) => {
        const routed = routeCompletion(request.params.ref, index, view)
        if (routed === undefined || !routed.allowed(view) || !index.completions[routed.backend]) {
          return { completion: { values: [] } }
        }
        const result = await forward(routed.backend, ctx, routed.allowed, (client, options) =>
          client.complete({ ...request.params, ref: routed.ref }, options)
        )
        return withoutReservedMeta(result)
      })
    }
    server.setNotificationHandler("notifications/cancelled", (notification) => {
      deps.toolCalls.inFlight.cancel(view.caller, notification.params?.requestId)
    })
    return server
  }
}

type CompletionRef = CompleteRequest["params"]["ref"]

/** Where a completion goes, and the permission it needs: the prompt itself, or reading the backend's resources. */
const routeCompletion = (
  ref: CompletionRef,
  index: CatalogIndex,
  view: View
): { readonly backend: number; readonly ref: CompletionRef; readonly allowed: (view: View) => boolean } | undefined => {
  if (ref.type === "ref/prompt") {
    const entry = index.promptByName.get(ref.name)
    return entry === undefined
      ? undefined
      : { backend: entry.backend, ref: { ...ref, name: entry.original }, allowed: (view) => view.seesPrompt(entry) }
  }
  const route = routeUri(index, ref.uri, (backend) => view.readsResources(backend))
  if (route._tag !== "Backend" || isAmbiguousUri(route.original)) return undefined
  const { backend } = route
  return { backend, ref: { ...ref, uri: route.original }, allowed: (next) => next.readsResources(backend) }
}

const stringOrUndefined = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

const declaredCapabilities = (envelope: Record<string, unknown> | undefined): Record<string, unknown> | undefined => {
  const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY]
  return isRecord(declared) ? declared : undefined
}
