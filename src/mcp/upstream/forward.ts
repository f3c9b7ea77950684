import { type Client, type RequestOptions, SdkError, SdkErrorCode } from "@modelcontextprotocol/client"
import { ProtocolError, ProtocolErrorCode, type ServerContext } from "@modelcontextprotocol/server"
import { Duration } from "effect"
import { renewsCredentials } from "./auth.js"
import type { BackendChannel, JsonRpcErrorObject } from "./channel.js"
import { jsonRpcErrorIn } from "./error-body.js"
import { isLostSession } from "./lost-session.js"
import type { BackendSlot } from "./slot.js"

/** JSON-RPC code for a call cut off by its deadline (the value MCP SDKs have used for request timeouts). */
export const requestTimeoutCode = -32001

/** The answers every forwarded request shares when the backend does not give one. */
export const backendUnavailable = (id: string) => `Backend "${id}" is unavailable.`
export const backendTimedOut = (id: string) => `Backend "${id}" did not answer in time; the call was cancelled.`
export const backendFailed = (id: string) => `Backend "${id}" failed to answer.`
/** The gateway-wide budget of answers held at once (`server.max_answer_bytes_in_flight`) refused this one. */
export const answerDropped = (id: string) =>
  `Backend "${id}"'s answer was dropped: the gateway is holding as many large answers as it may at once. The call may have run; try again shortly.`
export const methodNotServed = (id: string) => `Method not found: backend "${id}" does not serve it.`
export const inputNotRelayed = (id: string) => `Backend "${id}" asked for more input, which the gateway does not relay.`

export interface ForwardTarget {
  readonly slot: BackendSlot
  /** Absolute deadline (ms since epoch): the request's `request_timeout`, if sooner than the backend's `timeouts.call`. */
  readonly deadline: number
  /** `reason`: safe to log (never a body or a credential). */
  readonly reportFailure: (reason: string) => void
  /** The backend is unavailable and a caller wants it: the worker tries to connect at once (`Backends.wanted`). */
  readonly wanted?: () => void
  /**
   * Waits (until the deadline or `signal`) for the backend's next connection after `previous`; true
   * once one is up. For a request the backend refused because it forgot the session.
   */
  readonly reconnected?: (previous: BackendChannel | undefined, signal: AbortSignal) => Promise<boolean>
}

/** What went wrong, in words safe to log: an HTTP status or the error's kind, never the backend's body. */
const failureReason = (error: unknown): string => {
  const status = (error as { data?: { status?: unknown } } | null)?.data?.status
  if (typeof status === "number") return `the backend answered HTTP ${status}`
  return error instanceof SdkError ? `the MCP client failed (${error.code})` : "the request to the backend failed"
}

/** What the MCP client's error says of the backend's HTTP answer: its status and (when read) its body. */
const httpAnswer = (error: unknown): { readonly status: number; readonly text: string | undefined } | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const data = (error as { data?: unknown }).data
  if (typeof data !== "object" || data === null) return undefined
  const { status, text } = data as { status?: unknown; text?: unknown }
  return typeof status === "number" ? { status, text: typeof text === "string" ? text : undefined } : undefined
}

/**
 * The backend refused the request because it no longer knows the session (src/mcp/upstream/lost-session.ts).
 * `renewable`: the backend's credentials are OAuth ones, which the MCP client renewed and sent again
 * before giving up on a 401.
 */
const sessionLost = (error: unknown, renewable: boolean): boolean => {
  const answer = httpAnswer(error)
  return answer !== undefined && isLostSession(answer.status, answer.text, renewable)
}

const isProtocolError = (error: unknown): error is { code: number; message: string; data?: unknown } =>
  error instanceof ProtocolError

const isTimeout = (error: unknown) =>
  typeof error === "object" && error !== null && (error as { code?: unknown }).code === "REQUEST_TIMEOUT"

/**
 * A backend that answers a request with an HTTP error status whose body is a JSON-RPC error (the MCP
 * SDK's servers answer an unsupported method with 404 and -32601) has answered: its code and message
 * pass through. Not so for 401/403 (the gateway's own credentials for the backend) or -32000, which
 * servers use for transport and session trouble: those stay failures of the backend.
 */
const jsonRpcErrorInHttpError = (error: unknown): JsonRpcErrorObject | undefined => {
  const answer = httpAnswer(error)
  if (answer === undefined || answer.status === 401 || answer.status === 403) return undefined
  const answered = jsonRpcErrorIn(answer.text)
  return answered === undefined || answered.code === -32000 ? undefined : answered
}

/**
 * Sends one request to a backend on behalf of a caller. The caller's cancellation (`signal`: a
 * disconnect, a `notifications/cancelled`, or the generation closing) aborts it, the deadline bounds it; either way the MCP client tells the backend
 * with `notifications/cancelled`. Progress the backend reports is relayed to the caller when the caller
 * asked for progress. Backend JSON-RPC errors pass through; anything else becomes a fixed message.
 */
export const forward = async <T>(
  target: ForwardTarget,
  onProgress: ((progress: Record<string, unknown>) => void) | undefined,
  signal: AbortSignal,
  send: (client: Client, options: RequestOptions) => Promise<T>
): Promise<T> => {
  const { slot } = target
  const client = slot.client
  if (client === undefined) {
    target.wanted?.()
    throw new ProtocolError(ProtocolErrorCode.InternalError, backendUnavailable(slot.config.id))
  }
  const timeout = Math.min(target.deadline - Date.now(), Duration.toMillis(slot.config.timeouts.call))
  const options: RequestOptions = {
    signal,
    timeout: Math.max(1, timeout),
    maxTotalTimeout: Math.max(1, timeout),
    ...(onProgress === undefined ? {} : { onprogress: (progress) => onProgress({ ...progress }) })
  }
  const channel = slot.channel
  const hadSession = slot.session?.()?.sessionId !== undefined
  const renewable = renewsCredentials(slot.config)
  try {
    return await send(client, options)
  } catch (first) {
    let error = first
    // A backend that restarted ran nothing: once the worker has a new session, the request goes once
    // more — once only. When the worker finds the backend up on its session instead, the refusal stands.
    if (!signal.aborted && hadSession && target.reconnected !== undefined && sessionLost(error, renewable)) {
      target.reportFailure("the backend no longer knows the session")
      const next = (await target.reconnected(channel, signal)) ? slot.client : undefined
      if (next !== undefined && next !== client) {
        try {
          return await send(next, options)
        } catch (again) {
          error = again
        }
      }
    }
    if (signal.aborted) throw error
    // Still refused for its session (no new session came in time, the backend is up on this one, or the
    // new one was refused too): the backend's transport trouble, not an answer — its code, often -32001,
    // would read as the gateway's request timeout.
    if (hadSession && sessionLost(error, renewable)) {
      if (Date.now() >= target.deadline) throw new ProtocolError(requestTimeoutCode, backendTimedOut(slot.config.id))
      throw new ProtocolError(ProtocolErrorCode.InternalError, backendFailed(slot.config.id))
    }
    if (isProtocolError(error)) throw new ProtocolError(error.code, error.message, error.data)
    const answered = jsonRpcErrorInHttpError(error)
    if (answered !== undefined) throw new ProtocolError(answered.code, answered.message, answered.data)
    // The backend never declared the capability (e.g. resources/read on a backend with tools only):
    // what the backend itself would answer, without counting it as a failure of the backend.
    if (error instanceof SdkError && error.code === SdkErrorCode.CapabilityNotSupported) {
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, methodNotServed(slot.config.id))
    }
    if (error instanceof SdkError && error.code === SdkErrorCode.UnsupportedResultType) {
      throw new ProtocolError(ProtocolErrorCode.InternalError, inputNotRelayed(slot.config.id))
    }
    if (isTimeout(error)) {
      throw new ProtocolError(requestTimeoutCode, backendTimedOut(slot.config.id))
    }
    target.reportFailure(failureReason(error))
    throw new ProtocolError(ProtocolErrorCode.InternalError, backendFailed(slot.config.id))
  }
}

/** Progress the backend reports, relayed to a caller of the SDK path that asked for it (sent a `progressToken`). */
export const progressOf = (ctx: ServerContext): ((progress: Record<string, unknown>) => void) | undefined => {
  const progressToken = ctx.mcpReq._meta?.progressToken
  if (progressToken === undefined) return undefined
  return (progress) => {
    ctx.mcpReq
      .notify({ method: "notifications/progress", params: { ...progress, progressToken } as never })
      .catch(() => {})
  }
}
