import type { IncomingHttpHeaders } from "node:http"
import { ProtocolErrorCode, SERVER_INFO_META_KEY } from "@modelcontextprotocol/server"
import { Duration } from "effect"
import type { Caller } from "../auth/caller.js"
import { version } from "../version.js"
import { type BackendChannel, ChannelFailure, type JsonRpcErrorObject } from "./backend-channel.js"
import type { BackendSlot } from "./backend-slot.js"
import { withoutReservedMeta } from "./catalog.js"
import type { ExposedTool } from "./catalog-index.js"
import { type DirectRequest, directRequest, isObject, plainHeaderValue } from "./direct.js"
import { backendFailed, backendTimedOut, backendUnavailable, inputNotRelayed, requestTimeoutCode } from "./forward.js"
import type { InFlightCalls } from "./in-flight.js"
import { exposeContentUris } from "./naming.js"
import type { Reply } from "./reply.js"

/** A `tools/call` the gateway forwards itself (see direct.ts for which requests qualify). */
export interface DirectCall {
  readonly era: DirectRequest["era"]
  readonly id: string | number
  readonly name: string
  readonly arguments: Record<string, unknown> | undefined
  readonly progressToken: string | number | undefined
}

const callParams: ReadonlySet<string> = new Set(["name", "arguments"])
const mirroredName = (params: Record<string, unknown>) => {
  const name = params["name"]
  // A name that needs the header's Base64 form is left to the SDK, which decodes it.
  return typeof name === "string" && plainHeaderValue(name) && name
}

/** The request, when it is a `tools/call` this path answers; undefined sends it to the SDK's handler. */
export const directToolCall = (message: unknown, headers: IncomingHttpHeaders): DirectCall | undefined => {
  const request = directRequest(message, headers, "tools/call", callParams, mirroredName)
  if (request === undefined) return undefined
  const { name, arguments: args } = request.params
  if (typeof name !== "string" || (args !== undefined && !isObject(args))) return undefined
  return { era: request.era, id: request.id, name, arguments: args, progressToken: request.progressToken }
}

export interface DirectCallContext {
  readonly slot: BackendSlot
  readonly tool: ExposedTool
  readonly caller: Caller
  readonly inFlight: InFlightCalls
  readonly reportFailure: () => void
  /** The backend's channel once it has reconnected after `previous` failed (Backends.nextChannel). */
  readonly nextChannel: (previous: BackendChannel, until: number) => Promise<BackendChannel | undefined>
  /** The request's cancellation: disconnect, request_timeout, generation closing. */
  readonly signal: AbortSignal
  /** Absolute deadline (ms since epoch) for the backend's answer. */
  readonly deadline: number
}

const serverInfo = { name: "gateway", version }

/**
 * A backend's result as the caller gets it: reserved `_meta` replaced by the gateway's own, stamped
 * complete; undefined when it is not a CallToolResult. A result that asks for input (2026-07-28
 * `input_required`) is refused: the gateway does not relay multi-round-trip requests.
 */
const callResult = (
  result: Record<string, unknown>,
  era: DirectCall["era"],
  backendId: string
): Record<string, unknown> | "input" | undefined => {
  const { content, isError, structuredContent, resultType } = result
  if (resultType !== undefined && resultType !== "complete")
    return resultType === "input_required" ? "input" : undefined
  if (
    content !== undefined &&
    !(Array.isArray(content) && content.every((block) => isObject(block) && typeof block["type"] === "string"))
  ) {
    return undefined
  }
  if (isError !== undefined && typeof isError !== "boolean") return undefined
  if (structuredContent !== undefined && !isObject(structuredContent)) return undefined
  const stripped = withoutReservedMeta(result as { _meta?: unknown })
  if (era === "legacy") {
    // A 2025-era result has no result type; the gateway's identity was given at `initialize`.
    const { resultType: _, ...rest } = stripped as Record<string, unknown>
    return { ...rest, content: exposeContentUris(backendId, content ?? []) }
  }
  const meta = isObject(stripped._meta) ? stripped._meta : {}
  return {
    ...stripped,
    content: exposeContentUris(backendId, content ?? []),
    resultType: "complete",
    _meta: { ...meta, [SERVER_INFO_META_KEY]: serverInfo }
  }
}

const errorOf = (error: JsonRpcErrorObject): JsonRpcErrorObject =>
  error.data === undefined
    ? { code: error.code, message: error.message }
    : { code: error.code, message: error.message, data: error.data }

/** Forwards the call and answers it on `reply`; progress the backend reports is streamed first (SSE). */
export const serveDirectCall = async (call: DirectCall, context: DirectCallContext, reply: Reply): Promise<void> => {
  const { slot, tool } = context
  const backendId = slot.config.id
  const answer = (body: { readonly result: unknown } | { readonly error: JsonRpcErrorObject }) =>
    reply.message(200, { jsonrpc: "2.0", id: call.id, ...body })
  const channel = slot.channel
  if (channel === undefined) {
    return answer({ error: { code: ProtocolErrorCode.InternalError, message: backendUnavailable(backendId) } })
  }
  const timeoutMs = Math.min(context.deadline - Date.now(), Duration.toMillis(slot.config.timeouts.call))
  const { progressToken } = call
  const onProgress =
    progressToken === undefined
      ? undefined
      : (progress: Record<string, unknown>) =>
          reply.notify({ jsonrpc: "2.0", method: "notifications/progress", params: { ...progress, progressToken } })
  const params =
    call.arguments === undefined ? { name: tool.original } : { name: tool.original, arguments: call.arguments }
  const send = (over: BackendChannel) =>
    context.inFlight.track(context.caller, call.id, context.signal, (signal) =>
      over.call("tools/call", params, tool.original, {
        signal,
        timeoutMs: Math.min(timeoutMs, context.deadline - Date.now()),
        ...(onProgress === undefined ? {} : { onProgress })
      })
    )
  // A backend that restarted has forgotten its sessions and ran nothing: once the worker has opened
  // a new session the call is sent again, so a backend's restart costs the caller a moment, not an error.
  const sendOnce = (over: BackendChannel) =>
    send(over).catch(async (error: unknown) => {
      if (!(error instanceof ChannelFailure) || !error.sessionLost) throw error
      context.reportFailure()
      const next = await context.nextChannel(over, context.deadline)
      if (next === undefined) throw error
      return send(next)
    })
  try {
    const outcome = await sendOnce(channel)
    if (!outcome.ok) return answer({ error: errorOf(outcome.error) })
    const result = callResult(outcome.result, call.era, backendId)
    if (result === "input") {
      return answer({
        error: {
          code: ProtocolErrorCode.InternalError,
          message: inputNotRelayed(backendId)
        }
      })
    }
    if (result !== undefined) return answer({ result })
    context.reportFailure()
    return answer({ error: { code: ProtocolErrorCode.InternalError, message: backendFailed(backendId) } })
  } catch (error) {
    if (!(error instanceof ChannelFailure)) throw error
    if (error.reason === "timeout")
      return answer({ error: { code: requestTimeoutCode, message: backendTimedOut(backendId) } })
    if (error.reason === "failed") {
      if (error.probe) context.reportFailure()
      return answer({ error: { code: ProtocolErrorCode.InternalError, message: backendFailed(backendId) } })
    }
    // Cancelled: by the request itself (its owner answers, if anyone still listens), or by the
    // caller's `notifications/cancelled`, which leaves this request to be answered.
    if (context.signal.aborted) return
    return answer({ error: { code: ProtocolErrorCode.InternalError, message: "The call was cancelled." } })
  }
}
