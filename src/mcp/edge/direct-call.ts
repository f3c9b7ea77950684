import type { IncomingHttpHeaders, ServerResponse } from "node:http"
import { CLIENT_CAPABILITIES_META_KEY, SERVER_INFO_META_KEY } from "@modelcontextprotocol/server"
import type { Context, Tracer } from "effect"
import { isRecord, putField } from "../../json.js"
import type { View } from "../../policy/view.js"
import type { Cancellation } from "../../runtime/cancellation.js"
import { version } from "../../version.js"
import { type ClientProfile, profileOfSessionId } from "../calls/client-profile.js"
import type { ToolCallRequest, ToolCalls } from "../calls/tool-calls.js"
import { plainHeaderValue } from "../header-values.js"
import { type DirectRequest, directRequest } from "./direct.js"
import type { Reply } from "./reply.js"

/** A `tools/call` the gateway answers itself (see direct.ts for which requests qualify). */
export interface DirectCall {
  readonly era: DirectRequest["era"]
  readonly id: string | number
  readonly name: string
  readonly arguments: Record<string, unknown> | undefined
  readonly progressToken: string | number | undefined
  /** The retry of a 2026-07-28 multi-round-trip call (docs/mcp.md, "Input requests"). */
  readonly inputResponses?: Record<string, unknown>
  readonly requestState?: string
  /** A 2026-07-28 caller's declared client capabilities (its envelope). */
  readonly clientCapabilities?: Record<string, unknown> | undefined
  /** A 2025-era caller's declared capabilities, from the session id the gateway gave it (undefined: none sent). */
  readonly clientProfile?: ClientProfile | undefined
}

const callParams: ReadonlySet<string> = new Set(["name", "arguments", "inputResponses", "requestState"])
const mirroredName = (params: Record<string, unknown>) => {
  const name = params["name"]
  // A name that needs the header's Base64 form is left to the SDK, which decodes it.
  return typeof name === "string" && plainHeaderValue(name) && name
}

/** The request, when it is a `tools/call` this path answers; undefined sends it to the SDK's handler. */
export const directToolCall = (
  message: unknown,
  headers: IncomingHttpHeaders,
  modernRevisions: ReadonlySet<string>
): DirectCall | undefined => {
  const request = directRequest(message, headers, "tools/call", callParams, mirroredName, modernRevisions)
  if (request === undefined) return undefined
  const { name, arguments: args, inputResponses, requestState } = request.params
  if (typeof name !== "string" || (args !== undefined && !isRecord(args))) return undefined
  // The retry fields belong to 2026-07-28 only, in their own shapes; anything else is the SDK's to answer.
  if ((inputResponses !== undefined || requestState !== undefined) && request.era !== "modern") return undefined
  if (inputResponses !== undefined && !isRecord(inputResponses)) return undefined
  if (requestState !== undefined && typeof requestState !== "string") return undefined
  return {
    era: request.era,
    id: request.id,
    name,
    arguments: args,
    progressToken: request.progressToken,
    ...(inputResponses === undefined ? {} : { inputResponses }),
    ...(requestState === undefined ? {} : { requestState }),
    ...(request.era === "modern"
      ? { clientCapabilities: capabilitiesOf(request.params) }
      : { clientProfile: profileOfSessionId(headers["mcp-session-id"]) })
  }
}

export interface DirectCallContext {
  readonly view: View
  readonly toolCalls: Context.Tag.Service<ToolCalls>
  /** The request's cancellation: disconnect, request_timeout, generation closing. */
  readonly signal: Cancellation
  /** Absolute deadline (ms since epoch) for the backend's answer. */
  readonly deadline: number
  /** The request's span, when tracing is on. */
  readonly span?: Tracer.AnySpan | undefined
}

const serverInfo = { name: "gateway", version }

const tooDeep = { code: -32603, message: "The backend's answer could not be relayed: it is nested too deeply." }

const tooManyWaiting = {
  ok: false as const,
  error: { code: -32603, message: "Too many requests for input are waiting for this caller's answers." }
}

/**
 * A result as a 2026-07-28 answer carries it: complete, with the gateway's own identity. A copy, key by
 * key in the result's order (`putField`: this runs on every call), `resultType` and `_meta` added last
 * when the result has none.
 */
const stamped = (result: Record<string, unknown>, era: DirectCall["era"]) => {
  if (era === "legacy") return result
  const answer: Record<string, unknown> = {}
  for (const key of Object.keys(result)) {
    if (key === "resultType") answer[key] = result[key] ?? "complete"
    else if (key === "_meta") answer[key] = stampedMeta(result[key])
    else putField(answer, key, result[key])
  }
  if (!Object.hasOwn(answer, "resultType")) answer["resultType"] = "complete"
  if (!Object.hasOwn(answer, "_meta")) answer["_meta"] = stampedMeta(undefined)
  return answer
}

/** A result's `_meta` (when it is an object) with the gateway's identity in it. */
const stampedMeta = (meta: unknown): Record<string, unknown> => {
  const stamped: Record<string, unknown> = {}
  if (isRecord(meta)) for (const key of Object.keys(meta)) putField(stamped, key, meta[key])
  stamped[SERVER_INFO_META_KEY] = serverInfo
  return stamped
}

/** Calls the tool (ToolCalls) and answers on `reply`; progress the backend reports is streamed first (SSE). */
export const serveDirectCall = async (call: DirectCall, context: DirectCallContext, reply: Reply): Promise<void> => {
  const { progressToken } = call
  const onProgress =
    progressToken === undefined
      ? undefined
      : (progress: Record<string, unknown>) =>
          reply.notify({ jsonrpc: "2.0", method: "notifications/progress", params: { ...progress, progressToken } })
  // 2025-era: every log message of the call (no session, so no level was set); a 2026-07-28 request
  // asking for logs names its level in a `_meta` key this path does not take: it goes through the SDK.
  const onLog =
    call.era === "legacy"
      ? (message: Record<string, unknown>) =>
          reply.notify({ jsonrpc: "2.0", method: "notifications/message", params: message })
      : undefined
  // A 2025-era caller on a stream is asked for the input a backend needs on this call's stream.
  const askCaller =
    call.era === "legacy"
      ? (request: { readonly method: string; readonly params: unknown }) =>
          context.toolCalls.inputs.ask(
            context.view.caller,
            request,
            (message) => reply.request(message),
            context.signal,
            context.deadline
          ) ?? Promise.resolve(tooManyWaiting)
      : undefined
  // Optional members set one by one rather than spread in: this runs on every call.
  const request: Mutable<ToolCallRequest> = {
    view: context.view,
    name: call.name,
    arguments: call.arguments,
    requestId: call.id,
    signal: context.signal,
    deadline: context.deadline
  }
  if (context.span !== undefined) request.span = context.span
  if (onProgress !== undefined) request.onProgress = onProgress
  if (onLog !== undefined) {
    request.onLog = onLog
    // `debug`: the whole log, also from a 2026-07-28 backend, which logs only at a level the request names.
    request.logLevel = "debug"
  }
  if (askCaller !== undefined) request.askCaller = askCaller
  if (call.clientProfile !== undefined) request.clientProfile = call.clientProfile
  if (call.era === "modern") {
    request.multiRound = {
      inputResponses: call.inputResponses,
      requestState: call.requestState,
      clientCapabilities: call.clientCapabilities
    }
  }
  const outcome = await context.toolCalls.call(request)
  if (outcome._tag === "Cancelled") return
  try {
    reply.message(
      200,
      outcome._tag === "Result"
        ? { jsonrpc: "2.0", id: call.id, result: stamped(outcome.result, call.era) }
        : { jsonrpc: "2.0", id: call.id, error: outcome.error }
    )
  } catch (error) {
    // A result nested thousands of levels deep overflows JSON.stringify's stack: the backend's
    // failure (-32603), not a 500 of the gateway's. Nothing was written: serializing comes first.
    if (!(error instanceof RangeError)) throw error
    reply.message(200, { jsonrpc: "2.0", id: call.id, error: tooDeep })
  }
  // What the backend's answer holds of the gateway-wide budget stays counted until the caller has it all
  // (the serialized answer waits in the socket's buffer meanwhile), or its connection is gone.
  if (outcome._tag === "Result" && outcome.release !== undefined) whenClosed(reply.response, outcome.release)
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const capabilitiesOf = (params: Record<string, unknown>): Record<string, unknown> | undefined => {
  const meta = params["_meta"]
  const declared = isRecord(meta) ? meta[CLIENT_CAPABILITIES_META_KEY] : undefined
  return isRecord(declared) ? declared : undefined
}

/** Runs `then` (once) when `response` is all handed to the system or its connection is closed — at once if it is. */
const whenClosed = (response: ServerResponse, then: () => void) => {
  if (response.writableFinished || response.destroyed) return then()
  response.once("finish", then)
  response.once("close", then)
}
