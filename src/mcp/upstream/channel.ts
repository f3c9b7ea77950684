import type { Agent as HttpAgent, IncomingMessage, OutgoingHttpHeaders } from "node:http"
import { request as httpRequest } from "node:http"
import type { Agent as HttpsAgent } from "node:https"
import { request as httpsRequest } from "node:https"
import { LOG_LEVEL_META_KEY } from "@modelcontextprotocol/client"
import { isRecord } from "../../json.js"
import { headerValue } from "../header-values.js"
import { SseDecoder } from "../sse.js"
import type { TokenSource } from "./auth.js"
import { isLostSession, lostSessionBodyLimit } from "./lost-session.js"

/**
 * The gateway's own JSON-RPC sender for calls it forwards (`tools/call`), beside the MCP client SDK
 * that owns the connection (era negotiation, session, catalogs, list_changed). It sends on the same
 * kept-alive connections, with the same credentials and the session the client negotiated, and reads
 * the answer as JSON or as a request-scoped SSE stream — without the SDK's per-request schema work,
 * which cost more CPU per forwarded call than the backend itself spent answering it (docs/benchmarks.md).
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
  | { readonly ok: true; readonly result: Record<string, unknown> }
  | { readonly ok: false; readonly error: JsonRpcErrorObject }

/** Why a call has no answer: its deadline, the caller's cancellation, or a backend that did not speak JSON-RPC. */
export class ChannelFailure extends Error {
  constructor(
    readonly reason: "timeout" | "cancelled" | "failed",
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
  readonly signal: AbortSignal
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
}

export interface BackendChannel {
  /** `name`: what the `Mcp-Name` header mirrors (the tool name of a `tools/call`). */
  readonly call: (
    method: string,
    params: Record<string, unknown>,
    name: string | undefined,
    options: CallOptions
  ) => Promise<ChannelAnswer>
}

export interface ChannelSettings {
  readonly url: URL
  readonly headers: Readonly<Record<string, string>>
  readonly tokens: TokenSource | undefined
  readonly agents: { readonly http: HttpAgent; readonly https: HttpsAgent }
  /** The session the MCP client negotiated; undefined until it is connected. */
  readonly session: () => BackendSession | undefined
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** Largest answer accepted (JSON body, or one SSE event); defaults to `maxBackendAnswer`. */
  readonly maxAnswer?: number
}

/** A backend answer larger than this is refused rather than buffered (JSON) or held (one SSE event). */
export const maxBackendAnswer = 32 * 1024 * 1024

const asObject = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {})

const isErrorObject = (value: unknown): value is JsonRpcErrorObject =>
  isRecord(value) && Number.isInteger(value["code"]) && typeof value["message"] === "string"

/**
 * The answer's media type, read from its raw headers: `incoming.headers` would build an object of every
 * header for this one. The first `Content-Type` counts, as in `incoming.headers` (Node drops repeats).
 */
const mediaType = (incoming: IncomingMessage) => {
  const raw = incoming.rawHeaders
  for (let at = 0; at + 1 < raw.length; at += 2) {
    const name = raw[at]!
    if (name.length === 12 && name.toLowerCase() === "content-type") {
      return raw[at + 1]!.split(";", 1)[0]!.trim().toLowerCase()
    }
  }
  return ""
}

export const makeBackendChannel = (settings: ChannelSettings): BackendChannel => {
  const { url, tokens } = settings
  // Credentials the gateway can renew (OAuth): a 401 drops the token and the request goes once more.
  const renewable = tokens?.invalidate !== undefined
  const maxAnswer = settings.maxAnswer ?? maxBackendAnswer
  const secure = url.protocol === "https:"
  const send = secure ? httpsRequest : httpRequest
  const agent = secure ? settings.agents.https : settings.agents.http
  // What node:http would derive from the URL on every request (urlToHttpOptions), derived once.
  const target = {
    protocol: url.protocol,
    hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
    ...(url.port === "" ? {} : { port: Number(url.port) }),
    path: `${url.pathname}${url.search}`,
    ...(url.username === "" && url.password === ""
      ? {}
      : { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }),
    method: "POST",
    agent
  }
  let counter = 0

  const headersFor = async (
    session: BackendSession,
    method: string | undefined,
    name: string | undefined,
    length: number
  ) => {
    const headers: OutgoingHttpHeaders = {
      ...settings.headers,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "content-length": length,
      "mcp-protocol-version": session.protocolVersion
    }
    if (tokens !== undefined) headers["authorization"] = `Bearer ${await tokens.token()}`
    if (session.sessionId !== undefined) headers["mcp-session-id"] = session.sessionId
    if (session.era === "modern" && method !== undefined) {
      headers["mcp-method"] = method
      if (name !== undefined) headers["mcp-name"] = headerValue(name)
    }
    return headers
  }

  const envelope = (session: BackendSession, capabilities: Record<string, unknown> = {}): Record<string, unknown> =>
    session.era === "modern"
      ? {
          "io.modelcontextprotocol/protocolVersion": session.protocolVersion,
          "io.modelcontextprotocol/clientInfo": settings.clientInfo,
          "io.modelcontextprotocol/clientCapabilities": capabilities
        }
      : {}

  /** Fire and forget: one message the backend needs no answer to (a notification, or our answer to its request). */
  const post = (session: BackendSession, method: string | undefined, message: unknown) => {
    const body = JSON.stringify(message)
    headersFor(session, method, undefined, Buffer.byteLength(body))
      .then((headers) => {
        const outgoing = send({ ...target, headers }, (incoming) => incoming.resume())
        outgoing.once("error", () => {})
        outgoing.end(body)
      })
      .catch(() => {})
  }

  const call: BackendChannel["call"] = (method, params, name, options) =>
    new Promise<ChannelAnswer>((resolve, reject) => {
      const session = settings.session()
      if (session === undefined) return reject(new ChannelFailure("failed", "not connected"))
      const id = `gw-${++counter}`
      const meta = {
        ...envelope(session, options.clientCapabilities),
        ...(options.logLevel !== undefined && session.era === "modern" ? { [logLevelKey]: options.logLevel } : {}),
        ...(options.onProgress === undefined ? {} : { progressToken: id })
      }
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id,
        method,
        params:
          Object.keys(meta).length === 0 ? params : { ...params, _meta: { ...meta, ...asObject(params["_meta"]) } }
      })
      let settled = false
      let outgoing: ReturnType<typeof send> | undefined
      const settle = (then: () => void) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        options.signal.removeEventListener("abort", onAbort)
        then()
      }
      const fail = (reason: ChannelFailure["reason"], detail: string, probe?: boolean, sessionLost?: boolean) =>
        settle(() => {
          outgoing?.destroy()
          if (reason !== "failed" && session.era === "legacy") {
            const params = { requestId: id, reason: detail }
            post(session, "notifications/cancelled", { jsonrpc: "2.0", method: "notifications/cancelled", params })
          }
          reject(new ChannelFailure(reason, detail, probe, sessionLost))
        })
      const timer = setTimeout(() => fail("timeout", "the call's deadline passed"), Math.max(1, options.timeoutMs))
      const onAbort = () => fail("cancelled", "the caller cancelled the call")
      if (options.signal.aborted) return onAbort()
      options.signal.addEventListener("abort", onAbort, { once: true })

      // A message of the answer: the response to our id settles the call; progress is relayed.
      const onMessage = (message: unknown) => {
        if (!isRecord(message)) return
        if (message["id"] === id && !("method" in message)) {
          const { result, error } = message
          if (isRecord(result)) settle(() => resolve({ ok: true, result }))
          else if (isErrorObject(error)) settle(() => resolve({ ok: false, error }))
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
        // A request from the backend (sampling, elicitation, roots): the gateway offers no client
        // capabilities, so it answers as the MCP client SDK does, rather than leave the backend waiting.
        const asked = message["id"]
        if (typeof message["method"] === "string" && (typeof asked === "string" || typeof asked === "number")) {
          const error = { code: -32601, message: "Method not found" }
          post(session, undefined, { jsonrpc: "2.0", id: asked, error })
        }
      }

      const read = (incoming: IncomingMessage, retried: boolean) => {
        const status = incoming.statusCode ?? 0
        if (status === 401 && tokens?.invalidate !== undefined && !retried) {
          incoming.resume()
          tokens.invalidate()
          attempt(true)
          return
        }
        const type = mediaType(incoming)
        const stream = status === 200 && type === "text/event-stream"
        const json = type === "application/json" && (status === 200 || (status === 400 && session.era === "modern"))
        if (!stream && !json) {
          const detail = `the backend answered HTTP ${status} (${type || "no content type"})`
          // Up, and refused this one request; but a 404 may be a lost route or session, and a 401 a session
          // the backend ties to its authentication: worth a probe, which reconnects if it fails too.
          const refused = status >= 400 && status < 500 && status !== 404 && status !== 401
          // A 401 says the session is lost only when our credentials were renewed and sent again (above).
          const mayBeLost = status === 404 || status === 400 || (status === 401 && renewable)
          if (session.sessionId === undefined || !mayBeLost) {
            incoming.resume()
            return fail("failed", detail, !refused)
          }
          // Sent with a session id: the answer may say the backend forgot it (restarted); nothing ran then.
          return readStart(incoming, lostSessionBodyLimit, (body) => {
            const lost = isLostSession(status, body, renewable)
            fail(
              "failed",
              lost ? `the backend no longer knows the session (HTTP ${status})` : detail,
              lost || !refused,
              lost
            )
          })
        }
        incoming.setEncoding("utf8")
        let size = 0
        const decoder = stream
          ? new SseDecoder((data) =>
              data.length > maxAnswer ? fail("failed", "the backend's event is too large") : onMessage(parse(data))
            )
          : undefined
        let text = ""
        incoming.on("data", (chunk: string) => {
          // Answered (or given up on): what a stream still sends is not read, and not kept.
          if (settled) return
          size += chunk.length
          if (decoder === undefined) {
            text += chunk
            if (size > maxAnswer) fail("failed", "the backend's answer is too large")
            return
          }
          decoder.push(chunk)
          if (decoder.pending > maxAnswer) fail("failed", "the backend's event is too large")
          else if (settled) {
            const linger = setTimeout(() => outgoing?.destroy(), streamGraceMs)
            incoming.once("end", () => clearTimeout(linger))
          }
        })
        incoming.once("end", () => {
          if (decoder === undefined) onMessage(parse(text))
          fail(
            "failed",
            stream ? "the backend's stream ended without an answer" : "the backend's answer is not JSON-RPC"
          )
        })
        incoming.once("error", () => fail("failed", "the backend's answer was cut off"))
      }

      const attempt = (retried: boolean) => {
        headersFor(session, method, name, Buffer.byteLength(body)).then(
          (headers) => {
            if (settled) return
            try {
              outgoing = send({ ...target, headers }, (incoming) => read(incoming, retried))
            } catch {
              // Node refuses a header value it cannot send (a token with control characters, say).
              return fail("failed", "the request to the backend could not be built")
            }
            outgoing.once("error", (error: NodeJS.ErrnoException) =>
              fail("failed", `the backend could not be reached (${error.code ?? "error"})`)
            )
            outgoing.end(body)
          },
          () => fail("failed", "no token for the backend could be obtained")
        )
      }
      attempt(false)
    })

  return { call }
}

/** The first `limit` characters of a body (undefined if it is longer, or cut off); the rest is discarded. */
const readStart = (incoming: IncomingMessage, limit: number, done: (body: string | undefined) => void) => {
  let text = ""
  let finished = false
  const finish = (body: string | undefined) => {
    if (finished) return
    finished = true
    incoming.removeAllListeners("data")
    incoming.resume()
    done(body)
  }
  incoming.setEncoding("utf8")
  incoming.on("data", (chunk: string) => {
    text += chunk
    if (text.length > limit) finish(undefined)
  })
  incoming.once("end", () => finish(text))
  incoming.once("error", () => finish(undefined))
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
