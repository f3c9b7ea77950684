import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import { isJsonContentType } from "@modelcontextprotocol/server"
import { Cause, Context, Duration, Effect, Exit, Layer, LogLevel, Option, Runtime, type Tracer } from "effect"
import { resolveClientAddress, trustedProxyList } from "../../auth/client-address.js"
import { BearerVerifier } from "../../bearer/verifier.js"
import { Config } from "../../config/service.js"
import { echo, SecurityLog } from "../../events/security-log.js"
import { HttpError } from "../../http/error-body.js"
import { corsHeaders, originPolicy, originRefused } from "../../http/origin.js"
import {
  accessFields,
  accessLogLevel,
  cancelledByGeneration,
  internalError,
  newRequestId,
  reportedElsewhere,
  requestTimedOut,
  shouldLogAccess,
  storeUnavailable
} from "../../http/request-context.js"
import { isRecord } from "../../json.js"
import { methodLabel, metrics } from "../../observability/metrics.js"
import { closeSpan, incomingParent, openSpan, Tracing } from "../../observability/tracing.js"
import { PolicyEngine } from "../../policy/engine.js"
import type { View } from "../../policy/view.js"
import { abortSignalOf, type Cancellation, Canceller } from "../../runtime/cancellation.js"
import { GenerationRequests } from "../../runtime/requests-in-flight.js"
import { StoreHealth } from "../../store/health.js"
import { unavailableReason } from "../../store/unavailable.js"
import { profileOf, sessionIdFor } from "../calls/client-profile.js"
import { answerTooDeep, isJsonRpcResponse } from "../calls/input-relay.js"
import { ToolCalls } from "../calls/tool-calls.js"
import { Backends } from "../upstream/backends.js"
import { directToolCall, serveDirectCall } from "./direct-call.js"
import { directToolList, ToolPages } from "./direct-list.js"
import { invalidParams } from "./params.js"
import { Reply } from "./reply.js"
import { charsetRefusal, parseMessage, readBody, unsupportedMediaType } from "./request-body.js"
import { McpEndpoint } from "./sdk-endpoint.js"
import { sdkProfile } from "./sdk-profile.js"
import { servedVersions, withEveryVersion } from "./versions.js"

/**
 * `POST /mcp`, the data plane's hot path, as a plain Node handler that the generation calls directly
 * (docs/decisions.md, "/mcp outside the Effect router"). The Effect HTTP pipeline cost more CPU per
 * request than a whole forwarded call may (docs/benchmarks.md); this handler keeps what that pipeline
 * gave — request id, access log, the one error body, `request_timeout`, cancellation when the client
 * disconnects or the generation closes — and uses the generation's services (verifier, policy engine,
 * backends, the SDK endpoint) as they are. It decides nothing itself: the caller's View does.
 */
export class McpPost extends Context.Tag("gateway/McpPost")<
  McpPost,
  { readonly handle: (request: IncomingMessage, response: ServerResponse) => void }
>() {}

/** Whether the gateway answers the requests it can check completely itself (always, but in tests comparing paths). */
export class DirectPathEnabled extends Context.Tag("gateway/DirectPathEnabled")<DirectPathEnabled, boolean>() {}

// The handler's own deadline ends this much before request_timeout, so the caller gets the JSON-RPC
// timeout error (and the backend its cancellation) rather than the generic 504 of the HTTP layer.
const deadlineMargin = 25

/** Why a request's controller aborted: the reason is the answer, when headers are not out yet. */
const disconnected = Symbol("disconnected")
const accessWithdrawn = Symbol("access withdrawn")

/** How often an open `subscriptions/listen` stream re-checks its token, session and permission. */
export const STREAM_RECHECK_MS = 30_000

// Credentials stay out of what the SDK sees: handlers get the caller through the grant, never the token.
// So does the gateway's own session id (client-profile.ts): the SDK serves every request statelessly.
const withheldHeaders = new Set(["authorization", "cookie", "mcp-session-id"])

/** The request headers handed to the SDK: all but the credentials. */
export const sdkRequestHeaders = (headers: IncomingHttpHeaders): Headers => {
  const result = new Headers()
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined || withheldHeaders.has(name)) continue
    result.set(name, Array.isArray(value) ? value.join(", ") : value)
  }
  return result
}

const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  typeof value === "string" || value === undefined ? value : value.join(", ")

const acceptsStream = (accept: string | undefined) => accept?.includes("text/event-stream") === true

/** What the metrics and the trace learn of a request as it is served: its JSON-RPC method, its span. */
interface Observed {
  method: unknown
  readonly span: Tracer.Span | undefined
}

export const McpPostLive = Layer.scoped(
  McpPost,
  Effect.gen(function* () {
    const { config } = yield* Config
    const verifier = yield* BearerVerifier
    const engine = yield* PolicyEngine
    const backends = yield* Backends
    const endpoint = yield* McpEndpoint
    const toolCalls = yield* ToolCalls
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const accessLog = config.log_level === "debug"
    const requestTimeoutMs = Duration.toMillis(config.request_timeout)
    const directPath = yield* DirectPathEnabled
    const { tracer, external } = yield* Tracing
    const trustIncoming = config.observability.trust_incoming_trace
    const { modernRevisions, modernListTail } = yield* Effect.promise(sdkProfile)
    const everyVersion = servedVersions(modernRevisions)
    const toolPages = new ToolPages(config.catalog.page_size, modernListTail)
    const originAllowed = originPolicy(config)
    const timedOut = requestTimedOut(config.request_timeout)
    const securityLog = yield* SecurityLog
    const storeHealth = yield* StoreHealth
    const trusted = trustedProxyList(config.server.trusted_proxies)
    const addressOf = (request: IncomingMessage) =>
      resolveClientAddress(request.socket.remoteAddress, headerText(request.headers["x-forwarded-for"]), trusted)

    /** A refused Origin or bearer token: one security line (bounded per address, docs/operations.md). */
    const logRefusal = (request: IncomingMessage, error: HttpError, requestId: string) => {
      if (error.code === "origin_not_allowed") {
        const address = addressOf(request)
        runFork(
          securityLog.limited(address, "http.origin_refused", {
            request_id: requestId,
            client_address: address,
            origin: echo(request.headers.origin ?? ""),
            path: "/mcp"
          })
        )
      } else if (error.code === "invalid_token") {
        runFork(
          securityLog.tokenRejected(addressOf(request), error.description, { request_id: requestId, resource: "mcp" })
        )
      }
    }

    // Closing the generation (its scope) cancels its requests;
    // those not yet answered get 503.
    const requests = yield* GenerationRequests

    // The generation's clock (a TestClock in tests), read synchronously by the fast path below.
    const clock = yield* Effect.clock

    /**
     * The token, then the caller's view (or the request's 401/403): the view itself when neither needs
     * I/O (a cached token and policy), which is the common case, else a promise of it. Throws the
     * refusal when it is decided at once.
     */
    const authorize = (authorization: string | undefined): View | Promise<View> => {
      // The common case first: the verifier, the session guard and the engine each answer from their
      // own caches, with their own checks, or say "ask me" — never refuse — so this decides nothing the
      // Effect below would not; it only spares a fiber per request (docs/decisions.md, "Per-call overhead").
      const now = clock.unsafeCurrentTimeMillis()
      const caller = verifier.verifyNow(authorization, now)
      const known = caller === undefined ? undefined : engine.viewNow(caller, now)
      if (known !== undefined) return known
      // The fiber ends in an Exit, never a failure: a failed fiber nobody joins is reported by the
      // runtime ("Fiber terminated with an unhandled error") and its cause kept for that report.
      const fiber = runFork(Effect.exit(Effect.flatMap(verifier.verify(authorization), engine.view)))
      const done = fiber.unsafePoll()
      const settle = (outer: Exit.Exit<Exit.Exit<View, HttpError>>) => {
        const exit = outer._tag === "Success" ? outer.value : Exit.failCause(outer.cause)
        if (exit._tag === "Success") return exit.value
        const failure = Cause.failureOption(exit.cause)
        throw Option.isSome(failure) ? failure.value : Cause.squash(exit.cause)
      }
      if (done !== null) return settle(done)
      return new Promise((resolve, reject) =>
        fiber.addObserver((exit) => {
          try {
            resolve(settle(exit))
          } catch (error) {
            reject(error)
          }
        })
      )
    }

    const serve = async (
      request: IncomingMessage,
      reply: Reply,
      allowedOrigin: boolean,
      signal: Cancellation,
      started: number,
      observed: Observed
    ) => {
      if (!allowedOrigin) throw originRefused
      // Refused before the body is read; and decided again once it has arrived, so a request whose
      // body was held back while access was withdrawn or the session revoked runs with today's access.
      const decided = authorize(request.headers.authorization)
      const first = await decided
      // The usual small body comes in the same read from the socket as the headers: a decision made at
      // once (no I/O) in that read's callback, with the body complete when its microtasks run (now),
      // was made with nothing able to change in between — no other I/O, timer or write ran — so it is
      // the decision after the body's arrival, and is not made twice (docs/decisions.md, "Per-call overhead").
      const withBody = !(decided instanceof Promise) && request.complete
      if (!isJsonContentType(request.headers["content-type"] ?? null)) throw unsupportedMediaType
      const charset = charsetRefusal(request.headers["content-type"])
      if (charset !== undefined) throw charset
      const parsed = parseMessage(await readBody(request, signal))
      const view = withBody ? first : await authorize(request.headers.authorization)
      if (parsed._tag === "Message" && isRecord(parsed.message)) observed.method = parsed.message["method"]
      if (parsed._tag === "Rejected") {
        const { status, code, message } = parsed.rejection
        return reply.message(status, { jsonrpc: "2.0", id: null, error: { code, message } })
      }
      // A client's answer to a request for input the gateway sent it (docs/mcp.md, "Input requests").
      if (isJsonRpcResponse(parsed.message)) {
        const taken = toolCalls.inputs.answer(view.caller, parsed.message)
        if (taken === "delivered") return reply.accepted()
        const error = taken === "too deep" ? answerTooDeep : unmatchedAnswer
        return reply.message(400, { jsonrpc: "2.0", id: null, error })
      }
      const deadline = started + Math.max(1, requestTimeoutMs - deadlineMargin)
      const list = directPath ? directToolList(parsed.message, request.headers, modernRevisions) : undefined
      if (list !== undefined) {
        const result = toolPages.result(backends.index(), view, list.cursor, list.era)
        if (result !== undefined) return reply.result(list.id, result)
      }
      const call = directPath ? directToolCall(parsed.message, request.headers, modernRevisions) : undefined
      const span = observed.span
      if (call !== undefined) return serveDirectCall(call, { view, toolCalls, signal, deadline, span }, reply)
      const problem = invalidParams(parsed.message)
      if (problem !== undefined) {
        const id = (parsed.message as { id: string | number | null }).id
        return reply.message(200, { jsonrpc: "2.0", id, error: { code: -32602, message: problem } })
      }
      const response = await endpoint.serve(
        new Request(config.server.public_url, {
          method: "POST",
          headers: sdkRequestHeaders(request.headers),
          signal: abortSignalOf(signal)
        }),
        parsed.message,
        { view, deadline, span }
      )
      return reply.web(withSessionId(parsed.message, await withEveryVersion(observed.method, response, everyVersion)))
    }

    const log = (level: LogLevel.LogLevel, message: string, annotations: Record<string, unknown>, cause?: unknown) =>
      runFork(
        (cause === undefined
          ? Effect.logWithLevel(level, message)
          : Effect.logWithLevel(level, message, Cause.die(cause))
        ).pipe(Effect.annotateLogs(annotations))
      )

    /**
     * A `subscriptions/listen` stream lives until the client or the generation ends it, or until its
     * caller may no longer subscribe: decided again after every policy change and every
     * `STREAM_RECHECK_MS` (a revoked session, an expired token).
     */
    const watchStream = (request: IncomingMessage, response: ServerResponse, controller: Canceller) => {
      const end = (reason: string, subject: string | undefined) => {
        if (controller.aborted) return
        controller.abort(accessWithdrawn)
        log(LogLevel.Info, "policy.listen_closed", { event: "policy.listen_closed", reason, subject: subject ?? null })
      }
      const recheck = () =>
        new Promise<View>((resolve) => resolve(authorize(request.headers.authorization))).then(
          (view) => {
            if (!view.subscribes) end("subscribe_withdrawn", view.caller.subject)
          },
          (error: unknown) => end(error instanceof HttpError ? error.code : "refused", undefined)
        )
      const unsubscribe = engine.onChange(() => void recheck())
      const interval = setInterval(() => void recheck(), STREAM_RECHECK_MS)
      response.once("close", () => {
        unsubscribe()
        clearInterval(interval)
      })
    }

    const handle = (request: IncomingMessage, response: ServerResponse) => {
      const started = performance.now()
      const startedAt = Date.now()
      const requestId = newRequestId()
      const observed: Observed = {
        method: undefined,
        span:
          tracer === undefined
            ? undefined
            : openSpan(
                tracer,
                "POST /mcp",
                trustIncoming
                  ? incomingParent(request.headers.traceparent, request.headers.tracestate, external)
                  : undefined,
                "server",
                { "http.request.method": "POST", "http.route": "/mcp" }
              )
      }
      const origin = request.headers.origin
      const allowedOrigin = originAllowed(origin)
      // A Canceller, not an AbortController: the same for this use, at a fraction of the CPU (src/runtime/cancellation.ts).
      const controller = new Canceller()
      requests.onCancel(request, () => controller.abort(cancelledByGeneration))
      const timer = setTimeout(() => controller.abort(timedOut), requestTimeoutMs)
      const reply = new Reply(
        response,
        requestId,
        allowedOrigin && origin !== undefined
          ? { ...corsHeaders(origin), "x-request-id": requestId }
          : { "x-request-id": requestId },
        acceptsStream(request.headers.accept),
        () => {
          clearTimeout(timer)
          watchStream(request, response, controller)
        }
      )
      response.once("close", () => {
        clearTimeout(timer)
        if (!response.writableFinished) controller.abort(disconnected)
        // 499 (as nginx logs it): the client went away before any answer.
        const status = response.headersSent ? response.statusCode : 499
        const method = methodLabel(observed.method)
        metrics.request("/mcp", status)
        metrics.mcpRequest(method, (performance.now() - started) / 1000)
        if (observed.span !== undefined) {
          observed.span.attribute("http.response.status_code", status)
          observed.span.attribute("mcp.method.name", method)
          closeSpan(observed.span, status >= 500 ? String(status) : status === 499 ? "client_closed" : undefined)
        }
        if (shouldLogAccess(accessLog, status, request)) {
          log(accessLogLevel(status), "request", {
            request_id: requestId,
            ...accessFields("POST", request.url ?? "", status, started)
          })
        }
      })
      // A cancelled request is answered with the reason it was cancelled for, if it can still be answered.
      controller.addEventListener("abort", () => {
        const reason: unknown = controller.reason
        if (reason instanceof HttpError && !reply.sent) reply.error(reason)
        else reply.end()
      })
      serve(request, reply, allowedOrigin, controller, startedAt, observed).then(
        () => {
          if (controller.aborted) reply.end()
        },
        (error: unknown) => {
          if (error instanceof HttpError) {
            if (error.status === 401 || error.status === 403) logRefusal(request, error, requestId)
            return reply.error(error)
          }
          // The store did not answer: 503, and the outage's own lines instead of one error per request.
          const unavailable = unavailableReason(error)
          if (unavailable !== undefined) {
            reportedElsewhere(request)
            runFork(storeHealth.failed(unavailable).pipe(Effect.annotateLogs("request_id", requestId)))
            if (!reply.sent) reply.error(storeUnavailable)
            else response.destroy()
            return
          }
          log(LogLevel.Error, "unhandled failure", { request_id: requestId }, error)
          if (!reply.sent) reply.error(internalError)
          else response.destroy()
        }
      )
    }
    return { handle }
  })
)

/**
 * A 2025-era `initialize` the SDK answered: the answer carries the gateway's session id, which holds
 * what the client declared (src/mcp/calls/client-profile.ts) and comes back on its every request.
 */
const withSessionId = (message: unknown, response: Response): Response => {
  if (!isRecord(message) || message["method"] !== "initialize" || response.status !== 200) return response
  const params = message["params"]
  const headers = new Headers(response.headers)
  headers.set("mcp-session-id", sessionIdFor(profileOf(isRecord(params) ? params["capabilities"] : undefined)))
  return new Response(response.body, { status: response.status, headers })
}

const unmatchedAnswer = {
  code: -32600,
  message: "Invalid Request: this response answers no request the gateway is waiting for."
}
