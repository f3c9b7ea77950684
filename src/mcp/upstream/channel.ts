import { StringDecoder } from "node:string_decoder"
import { LOG_LEVEL_META_KEY } from "@modelcontextprotocol/client"
import { Agent, type Dispatcher, Pool } from "undici"
import { isRecord } from "../../json.js"
import type { TraceHeaders } from "../../observability/tracing.js"
import type { Cancellation } from "../../runtime/cancellation.js"
import { type ClientProfile, noProfile } from "../calls/client-profile.js"
import { headerValue } from "../header-values.js"
import { SseDecoder } from "../sse.js"
import { type AnswerBudget, handOff, handOffFromBytes } from "./answer-budget.js"
import type { TokenSource } from "./auth.js"
import { isLostSession, lostSessionBodyLimit } from "./lost-session.js"
import { ProfileSessions } from "./profile-sessions.js"

/**
 * The gateway's own JSON-RPC sender for calls it forwards (`tools/call`), beside the MCP client SDK
 * that owns the connection (era negotiation, session, catalogs, list_changed). It sends with the same
 * credentials and the session the client negotiated, and reads the answer as JSON or as a
 * request-scoped SSE stream — without the SDK's per-request schema work, which cost more CPU per
 * forwarded call than the backend itself spent answering it (docs/benchmarks.md). Its requests go
 * through an undici `Agent` of kept-alive connections, which the MCP client's fetch shares, driven by
 * `dispatch` handlers: about 40 µs of CPU and of latency less per call than node:http's request and
 * response objects (docs/decisions.md, "Per-call overhead").
 *
 * Cancellation follows the era, as the client SDK does: a 2026-07-28 backend learns of it by its
 * request closing; a 2025-era backend also gets `notifications/cancelled`.
 */
export interface BackendSession {
  readonly era: "modern" | "legacy"
  readonly protocolVersion: string
  readonly sessionId: string | undefined
}

export interface JsonRpcErrorObject {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

export type ChannelAnswer =
  | {
      readonly ok: true
      readonly result: Record<string, unknown>
      /**
       * Gives back what the answer holds of the gateway-wide budget: call it once the result has been
       * written to the caller (src/mcp/upstream/answer-budget.ts, `handOff`). Absent: nothing is held.
       */
      readonly release?: () => void
    }
  | { readonly ok: false; readonly error: JsonRpcErrorObject }

/**
 * Why a call has no answer: its deadline, the caller's cancellation, a backend that did not speak
 * JSON-RPC, or the gateway-wide budget of answers held at once (`over_budget`: the backend is fine).
 */
export class ChannelFailure extends Error {
  constructor(
    readonly reason: "timeout" | "cancelled" | "failed" | "over_budget",
    /** Safe to log: never carries credentials or the backend's body. */
    detail: string,
    /**
     * The backend may be down or have lost its session: worth a probe. False when it answered with a
     * client error (4xx but 404 and 401) — it is up, and refused this one request.
     */
    readonly probe = reason === "failed",
    /** A 2025-era backend no longer knows our session id (it restarted; src/mcp/upstream/lost-session.ts): nothing ran. */
    readonly sessionLost = false
  ) {
    super(detail)
  }
}

/** The 2026-07-28 request `_meta` key carrying the log level the caller wants (SEP-2577). */
const logLevelKey = LOG_LEVEL_META_KEY

/** After its answer, an SSE stream still open this long is closed: its connection cannot be reused mid-stream. */
const streamGraceMs = 1_000

export interface CallOptions {
  readonly signal: Cancellation
  readonly timeoutMs: number
  /** Progress the backend reports for this call (`notifications/progress` params, token removed). */
  readonly onProgress?: (progress: Record<string, unknown>) => void
  /** Log messages the backend sends on this call's stream (`notifications/message` params). */
  readonly onLog?: (message: Record<string, unknown>) => void
  /** The caller's log level, sent to a 2026-07-28 backend in the request's envelope. */
  readonly logLevel?: string
  /**
   * What the caller can answer (elicitation, sampling), declared to a 2026-07-28 backend in the
   * request's envelope so it may ask for input; the gateway itself declares nothing.
   */
  readonly clientCapabilities?: Record<string, unknown>
  /**
   * A 2025-era stateful backend: the call goes on the backend session that declared this profile of
   * client capabilities (opened on demand; src/mcp/upstream/profile-sessions.ts), so the backend asks
   * only what the caller can answer. Absent or none: the MCP client's own session, which declares none.
   */
  readonly profile?: ClientProfile
  /**
   * A request the backend sends on this call's stream (sampling, elicitation, roots): relayed to the
   * caller, whose answer goes back to the backend. Absent: declined with -32601, as the MCP client SDK
   * declines what it has no handler for.
   */
  readonly onRequest?: (request: { readonly method: string; readonly params: unknown }) => Promise<ChannelAnswer>
  /**
   * W3C trace context of the gateway's span for this call (`traceparent`, and `tracestate` when the
   * trace has one), sent so the backend's spans join the trace.
   */
  readonly trace?: TraceHeaders
}

export interface BackendChannel {
  /** `name`: what the `Mcp-Name` header mirrors (the tool name of a `tools/call`). */
  readonly call: (
    method: string,
    params: Record<string, unknown>,
    name: string | undefined,
    options: CallOptions
  ) => Promise<ChannelAnswer>
  /**
   * The channel's kept-alive connections, which the MCP client's fetch shares (src/mcp/upstream/fetch.ts):
   * one set per backend and generation.
   */
  readonly connections: Dispatcher
  /**
   * Sends a message whose answer nobody reads — a caller's relayed answer, a decline, a cancellation, the MCP client's answer to
   * a request the backend sent it — over a few connections of its own, each closed after
   * `replyTimeoutMs`; past `maxPendingReplies` waiting, it is dropped. `path` is the backend's.
   */
  readonly forget: (path: string, headers: Readonly<Record<string, string>>, body: string) => void
  /** Closes the channel's connections, the MCP client's with them; calls still in flight fail. */
  readonly close: () => void
}

export interface ChannelSettings {
  readonly url: URL
  /** The backend's fixed headers and credentials, names in lower case (`backendRequestAuth`). */
  readonly headers: Readonly<Record<string, string>>
  readonly tokens: TokenSource | undefined
  /** The session the MCP client negotiated; undefined until it is connected. */
  readonly session: () => BackendSession | undefined
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** Largest answer accepted (JSON body, or one SSE event); defaults to `maxBackendAnswer`. */
  readonly maxAnswer?: number
  /**
   * The gateway-wide count of answer bytes held (src/mcp/upstream/answer-budget.ts) and this
   * generation's limit on it (`server.max_answer_bytes_in_flight`); absent: only `maxAnswer` bounds.
   */
  readonly budget?: { readonly answers: AnswerBudget; readonly limit: number }
  /** How long a message the gateway sends and needs no answer to may take; defaults to `replyTimeoutMs`. */
  readonly replyTimeoutMs?: number
  /** Connections for those messages; defaults to `maxReplyConnections`. */
  readonly replyConnections?: number
}

/** A backend answer larger than this is refused rather than buffered (JSON) or held (one SSE event). */
export const maxBackendAnswer = 32 * 1024 * 1024

const isErrorObject = (value: unknown): value is JsonRpcErrorObject =>
  isRecord(value) && Number.isInteger(value["code"]) && typeof value["message"] === "string"

/**
 * A header of an answer as undici hands it over (name, value, name, value …, as bytes), by its
 * lower-case `name`; of a repeated header the first counts, as node:http does. Only names of the
 * same length are decoded.
 */
const rawHeader = (raw: ReadonlyArray<Buffer | string> | null, name: string): string | undefined => {
  if (raw === null) return undefined
  for (let at = 0; at + 1 < raw.length; at += 2) {
    const key = raw[at]!
    if (key.length === name.length && key.toString("latin1").toLowerCase() === name)
      return raw[at + 1]!.toString("latin1")
  }
  return undefined
}

/** The answer's media type. */
const mediaType = (contentType: string | undefined) =>
  contentType === undefined ? "" : contentType.split(";", 1)[0]!.trim().toLowerCase()

/**
 * Requests a backend may send on one call's stream (roots, sampling, elicitation: each answered with
 * a message of the gateway's own). More is not a client conversation but a flood, and ends the call.
 */
export const maxBackendRequestsPerCall = 32

/**
 * Bytes of notifications (progress, log messages, requests) one call's stream may carry beside its
 * answer. Each event is bounded by the answer limit; without a total, a backend could stream events of
 * 30 MB for as long as the call's timeout, each parsed and relayed on the event loop every request shares.
 */
export const maxNotificationBytesPerCall = 8 * 1024 * 1024

/** A message the gateway sends and reads no answer to (a reply, a cancellation) gets this long. */
export const replyTimeoutMs = 10_000

/**
 * Connections for those messages, per backend (one undici `Pool` of the backend's origin): a backend
 * that never answers them holds at most these, while calls and the MCP client's own requests go on
 * over connections of their own.
 */
export const maxReplyConnections = 16

/** Those messages waiting or in flight, per backend, at most; past it a new one is dropped. */
export const maxPendingReplies = 64

/** What the channel asks of undici: no deadlines of its own (each call's deadline is its caller's). */
const connectionOptions = { pipelining: 1, headersTimeout: 0, bodyTimeout: 0 } as const

/** How long opening a backend session for a profile of client capabilities may take, at most. */
const profileSessionTimeoutMs = 10_000

export const makeBackendChannel = (settings: ChannelSettings): BackendChannel => {
  const { url, tokens } = settings
  // Credentials the gateway can renew (OAuth): a 401 drops the token and the request goes once more.
  const renewable = tokens?.invalidate !== undefined
  const maxAnswer = settings.maxAnswer ?? maxBackendAnswer
  // An Agent, not a Pool of the backend's origin: the MCP client's fetch may also reach other origins
  // (an authorization server's metadata, say).
  const connections = new Agent(connectionOptions)
  const replyTimeout = settings.replyTimeoutMs ?? replyTimeoutMs
  const replies = new Pool(url.origin, {
    ...connectionOptions,
    connections: settings.replyConnections ?? maxReplyConnections
  })
  let pendingReplies = 0
  const forget = (target: string, headers: Readonly<Record<string, string>>, body: string, method = "POST") => {
    if (pendingReplies >= maxPendingReplies) return
    pendingReplies += 1
    let timer: ReturnType<typeof setTimeout> | undefined
    let done = false
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(timer)
      pendingReplies -= 1
    }
    try {
      replies.dispatch(
        { origin: url.origin, method, path: target, headers, ...(method === "POST" ? { body } : {}) },
        {
          // Closed after the time allowed however it trickles: not an idle timeout.
          onRequestStart: (controller) => {
            timer = setTimeout(() => controller.abort(new Error("closed by the gateway")), replyTimeout)
          },
          onResponseStart: () => {},
          onResponseData: () => {},
          onResponseEnd: finish,
          onResponseError: finish
        }
      )
    } catch {
      finish()
    }
  }
  const { origin } = url
  const path = `${url.pathname}${url.search}`
  let counter = 0

  /** A request's headers but the credentials a token source gives (`headersFor` adds them). */
  const headersBut = (session: BackendSession, method: string | undefined, name: string | undefined) => {
    const headers: Record<string, string> = {
      ...settings.headers,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": session.protocolVersion
    }
    if (session.sessionId !== undefined) headers["mcp-session-id"] = session.sessionId
    if (session.era === "modern" && method !== undefined) {
      headers["mcp-method"] = method
      if (name !== undefined) headers["mcp-name"] = headerValue(name)
    }
    return headers
  }

  const headersFor = async (session: BackendSession, method: string | undefined, name: string | undefined) => {
    const headers = headersBut(session, method, name)
    if (tokens !== undefined) headers["authorization"] = `Bearer ${await tokens.token()}`
    return headers
  }

  /** A call's `_meta`: the 2026-07-28 envelope, the caller's log level, the progress token; undefined when empty. */
  const metaOf = (session: BackendSession, options: CallOptions, id: string) => {
    const meta: Record<string, unknown> | undefined =
      session.era === "modern"
        ? {
            "io.modelcontextprotocol/protocolVersion": session.protocolVersion,
            "io.modelcontextprotocol/clientInfo": settings.clientInfo,
            "io.modelcontextprotocol/clientCapabilities": options.clientCapabilities ?? {}
          }
        : options.onProgress === undefined
          ? undefined
          : {}
    if (meta === undefined) return undefined
    if (options.logLevel !== undefined && session.era === "modern") meta[logLevelKey] = options.logLevel
    if (options.onProgress !== undefined) meta["progressToken"] = id
    return meta
  }

  /** Fire and forget: one message the backend needs no answer to (a notification, or our answer to its request). */
  const post = (session: BackendSession, method: string | undefined, message: unknown) => {
    const body = JSON.stringify(message)
    headersFor(session, method, undefined)
      .then((headers) => forget(path, headers, body))
      .catch(() => {})
  }

  const profiles = new ProfileSessions({
    connections,
    origin,
    path,
    headersFor: (session) => headersFor(session, undefined, undefined),
    clientInfo: settings.clientInfo,
    timeoutMs: profileSessionTimeoutMs
  })

  const call: BackendChannel["call"] = (method, params, name, options) => {
    const main = settings.session()
    const profile = options.profile ?? noProfile
    // Only a stateful 2025-era backend knows client capabilities per session; the common case goes at once.
    if (main === undefined || profile === noProfile || main.era !== "legacy" || main.sessionId === undefined) {
      return callOn(main, method, params, name, options)
    }
    const started = Date.now()
    const onProfile = async (retried: boolean): Promise<ChannelAnswer> => {
      const opening = profiles.session(main, profile)
      let session: BackendSession
      try {
        session = await opening
      } catch {
        throw new ChannelFailure("failed", "the backend opened no session for the caller's client capabilities")
      }
      const timeoutMs = options.timeoutMs - (Date.now() - started)
      try {
        return await callOn(session, method, params, name, { ...options, timeoutMs })
      } catch (failure) {
        // The backend forgot this session (it restarted, or expired it): nothing ran; once more on a new one.
        if (!(failure instanceof ChannelFailure) || !failure.sessionLost) throw failure
        profiles.drop(profile, opening)
        if (retried || options.signal.aborted) throw failure
        return onProfile(true)
      }
    }
    return onProfile(false)
  }

  const callOn = (
    session: BackendSession | undefined,
    method: string,
    params: Record<string, unknown>,
    name: string | undefined,
    options: CallOptions
  ) =>
    new Promise<ChannelAnswer>((resolve, reject) => {
      if (session === undefined) return reject(new ChannelFailure("failed", "not connected"))
      const id = `gw-${++counter}`
      const meta = metaOf(session, options, id)
      const own = params["_meta"]
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id,
        method,
        params: meta === undefined ? params : { ...params, _meta: isRecord(own) ? { ...meta, ...own } : meta }
      })
      let settled = false
      let requestsAnswered = 0
      // What this call's answer holds of the gateway-wide budget; given back when the call settles, or —
      // a large result — once its caller has it (`release` of the answer).
      const budget = settings.budget
      const hold = budget?.answers.hold(budget.limit)
      // The attempt in flight (a 401 with renewable credentials starts a second one), and undici's
      // handle on its request, to close it when the call ends early.
      interface Attempt {
        readonly retried: boolean
        /** undici's abort of the request, once it is on a connection. */
        abort: ((error: Error) => void) | undefined
        aborted: boolean
        answered: boolean
      }
      let current: Attempt | undefined
      const abortAttempt = (attempt: Attempt) => {
        if (attempt.abort === undefined || attempt.aborted) return
        attempt.aborted = true
        attempt.abort(new Error("closed by the gateway"))
      }
      const close = () => {
        if (current !== undefined && !current.answered) abortAttempt(current)
      }
      // `keep`: the answer's bytes stay counted, handed to the caller with the result.
      const settle = (then: () => void, keep = false) => {
        if (settled) return
        settled = true
        if (!keep) hold?.release()
        clearTimeout(timer)
        options.signal.removeEventListener("abort", onAbort)
        then()
      }
      const fail = (reason: ChannelFailure["reason"], detail: string, probe?: boolean, sessionLost?: boolean) =>
        settle(() => {
          close()
          if (reason !== "failed" && session.era === "legacy") {
            const params = { requestId: id, reason: detail }
            post(session, "notifications/cancelled", { jsonrpc: "2.0", method: "notifications/cancelled", params })
          }
          reject(new ChannelFailure(reason, detail, probe, sessionLost))
        })
      const overBudget = () =>
        fail("over_budget", "the answers held at once reached server.max_answer_bytes_in_flight", false)
      const timer = setTimeout(() => fail("timeout", "the call's deadline passed"), Math.max(1, options.timeoutMs))
      const onAbort = () => fail("cancelled", "the caller cancelled the call")
      if (options.signal.aborted) return onAbort()
      options.signal.addEventListener("abort", onAbort, { once: true })

      // A message of the answer: the response to our id settles the call; progress is relayed.
      const onMessage = (message: unknown) => {
        if (!isRecord(message)) return
        if (message["id"] === id && !("method" in message)) {
          const { result, error } = message
          if (isRecord(result)) {
            // A large answer stays counted until the caller has it; a small one is given back now.
            const keep = hold !== undefined && hold.bytes >= handOffFromBytes
            settle(() => resolve(keep ? { ok: true, result, release: handOff(hold) } : { ok: true, result }), keep)
          } else if (isErrorObject(error)) settle(() => resolve({ ok: false, error }))
          else fail("failed", "the backend's answer is not a JSON-RPC response")
          return
        }
        const progress = message["params"]
        if (message["method"] === "notifications/progress" && isRecord(progress) && progress["progressToken"] === id) {
          const { progressToken: _, ...rest } = progress
          options.onProgress?.(rest)
          return
        }
        // On this call's own stream, a log message belongs to this call.
        if (message["method"] === "notifications/message" && isRecord(progress)) {
          options.onLog?.(progress)
          return
        }
        // A request from the backend (sampling, elicitation, roots): relayed to the caller when it can
        // answer, else declined as the MCP client SDK declines, rather than leave the backend waiting.
        const asked = message["id"]
        const requested = message["method"]
        if (typeof requested === "string" && (typeof asked === "string" || typeof asked === "number")) {
          if (++requestsAnswered > maxBackendRequestsPerCall) {
            return fail("failed", `the backend sent more than ${maxBackendRequestsPerCall} requests during one call`)
          }
          const reply = (answer: ChannelAnswer) =>
            post(session, undefined, {
              jsonrpc: "2.0",
              id: asked,
              ...(answer.ok ? { result: answer.result } : { error: answer.error })
            })
          if (options.onRequest === undefined || settled) {
            return reply({ ok: false, error: { code: -32601, message: "Method not found" } })
          }
          options
            .onRequest({ method: requested, params: message["params"] })
            .then(reply, () =>
              reply({ ok: false, error: { code: -32603, message: "The request could not be relayed." } })
            )
        }
      }

      /**
       * How one attempt's answer is read. Once a later attempt has started, this one's answer is ignored.
       * undici's own handler interface (`onConnect` … `onComplete`), which its `request` and `fetch` use:
       * given one with `onRequestStart`, `dispatch` wraps it in an adapter that builds a controller and
       * an object of every header on each call, a few per cent of the gateway's CPU per forwarded call
       * (docs/decisions.md, "Per-call overhead"). Only the two headers read here are decoded.
       */
      const reader = (attempt: Attempt): Dispatcher.DispatchHandler => {
        const { retried } = attempt
        const superseded = () => current !== attempt
        // What the body is read for: JSON-RPC as JSON or SSE, the start of an error body, or nothing.
        let mode: "json" | "stream" | "start" | "ignore" = "ignore"
        let started = false
        const text = new StringDecoder("utf8")
        let received = ""
        let size = 0
        // Bytes of the answer received, and the length it declared (held from its first byte).
        let bytes = 0
        let declared = 0
        let decoder: SseDecoder | undefined
        let linger: ReturnType<typeof setTimeout> | undefined
        let judge: (body: string | undefined) => void = () => {}
        return {
          onConnect: (abort) => {
            attempt.abort = abort
            if (settled || superseded()) abortAttempt(attempt)
          },
          onHeaders: (status, headers) => {
            if (status < 200) return true
            started = true
            if (settled || superseded()) return true
            if (status === 401 && renewable && !retried) {
              tokens?.invalidate?.()
              send(true)
              // The refusal's body is not read; one that does not end soon must not hold its connection.
              linger = setTimeout(() => abortAttempt(attempt), streamGraceMs)
              return true
            }
            const type = mediaType(rawHeader(headers, "content-type"))
            const stream = status === 200 && type === "text/event-stream"
            const json = type === "application/json" && (status === 200 || (status === 400 && session.era === "modern"))
            if (stream) {
              mode = "stream"
              let streamed = 0
              decoder = new SseDecoder((data) => {
                if (data.length > maxAnswer) return fail("failed", "the backend's event is too large")
                // The answer's own event is at most maxAnswer; everything beyond it counts as notifications.
                streamed += data.length
                if (streamed > maxAnswer + maxNotificationBytesPerCall) {
                  return fail("failed", "the backend's stream for this call carried too many bytes of notifications")
                }
                onMessage(parse(data))
              })
              return true
            }
            if (json) {
              mode = "json"
              // A declared length is held at once: an answer that cannot fit fails before a byte is read.
              const length = Number(rawHeader(headers, "content-length") ?? "")
              declared = Number.isSafeInteger(length) && length > 0 ? length : 0
              if (declared > maxAnswer) fail("failed", "the backend's answer is too large")
              else if (hold !== undefined && !hold.to(declared)) overBudget()
              return true
            }
            const detail = `the backend answered HTTP ${status} (${type || "no content type"})`
            // Up, and refused this one request; but a 404 may be a lost route or session, and a 401 a session
            // the backend ties to its authentication: worth a probe, which reconnects if it fails too.
            const refused = status >= 400 && status < 500 && status !== 404 && status !== 401
            // A 401 says the session is lost only when our credentials were renewed and sent again (above).
            const mayBeLost = status === 404 || status === 400 || (status === 401 && renewable)
            if (session.sessionId === undefined || !mayBeLost) {
              fail("failed", detail, !refused)
              return true
            }
            // Sent with a session id: the answer may say the backend forgot it (restarted); nothing ran then.
            mode = "start"
            judge = (body) => {
              mode = "ignore"
              const lost = isLostSession(status, body, renewable)
              fail(
                "failed",
                lost ? `the backend no longer knows the session (HTTP ${status})` : detail,
                lost || !refused,
                lost
              )
            }
            return true
          },
          onData: (chunk) => {
            // Answered (or given up on): what a stream still sends is not read, and not kept.
            if (mode === "ignore" || (settled && mode !== "start")) return true
            const piece = text.write(chunk)
            size += piece.length
            bytes += chunk.length
            if (mode === "start") {
              received += piece
              if (received.length > lostSessionBodyLimit) judge(undefined)
            } else if (decoder === undefined) {
              received += piece
              if (size > maxAnswer) fail("failed", "the backend's answer is too large")
              else if (hold !== undefined && !hold.to(Math.max(declared, bytes))) overBudget()
            } else {
              decoder.push(piece)
              if (decoder.pending > maxAnswer) fail("failed", "the backend's event is too large")
              // Answered mid-stream: the rest may follow shortly; a stream kept open is closed after a grace.
              else if (settled) linger = setTimeout(close, streamGraceMs)
              // What the decoder holds of an event not yet complete.
              else if (hold !== undefined && !hold.to(decoder.pending)) overBudget()
            }
            return true
          },
          onComplete: () => {
            attempt.answered = true
            clearTimeout(linger)
            if (mode === "ignore" || superseded()) return
            const rest = text.end()
            if (mode === "start") return judge(received + rest)
            if (mode === "json") onMessage(parse(received + rest))
            else if (mode === "stream" && rest !== "") decoder?.push(rest)
            fail(
              "failed",
              mode === "stream"
                ? "the backend's stream ended without an answer"
                : "the backend's answer is not JSON-RPC"
            )
          },
          onError: (error) => {
            attempt.answered = true
            clearTimeout(linger)
            if (superseded()) return
            if (mode === "start") return judge(undefined)
            if (started) return fail("failed", "the backend's answer was cut off")
            const code = (error as NodeJS.ErrnoException).code
            // undici refuses a header value it cannot send (a token with control characters, say).
            if (code === "UND_ERR_INVALID_ARG") return fail("failed", "the request to the backend could not be built")
            fail("failed", `the backend could not be reached (${code ?? "error"})`)
          }
        }
      }

      const send = (retried: boolean) => {
        const attempt: Attempt = { retried, abort: undefined, aborted: false, answered: false }
        current = attempt
        const dispatch = (headers: Record<string, string>) => {
          if (settled) return
          const sent = options.trace === undefined ? headers : { ...headers, ...options.trace }
          connections.dispatch({ origin, method: "POST", path, headers: sent, body }, reader(attempt))
        }
        // Without a token source the request goes at once, not a promise's turn later.
        if (tokens === undefined) return dispatch(headersBut(session, method, name))
        headersFor(session, method, name).then(dispatch, () =>
          fail("failed", "no token for the backend could be obtained")
        )
      }
      send(false)
    })

  return {
    call,
    connections,
    forget,
    close: () => {
      connections.destroy().catch(() => {})
      if (!profiles.any()) {
        replies.destroy().catch(() => {})
        return
      }
      // Sessions opened for callers' capabilities are ended (best effort, over the reply connections).
      void profiles
        .sessions()
        .then((sessions) => Promise.all(sessions.map((session) => headersFor(session, undefined, undefined))))
        .then((all) => {
          for (const headers of all) forget(path, headers, "", "DELETE")
        })
        .catch(() => {})
        .finally(() => setTimeout(() => replies.destroy().catch(() => {}), 1_000).unref())
    }
  }
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
