import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RouteNotFound } from "@effect/platform/HttpServerError"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Duration, Effect, Exit, Fiber, FiberId, Option, Runtime } from "effect"
import { metrics, routeLabel } from "../observability/metrics.js"
import { closeSpan, openSpan, Tracing } from "../observability/tracing.js"
import type { RequestsInFlight } from "../runtime/requests-in-flight.js"
import { StoreHealth } from "../store/health.js"
import { unavailableCause } from "../store/unavailable.js"
import { errorResponse, HttpError } from "./error-body.js"
import {
  accessFields,
  accessLogLevel,
  cancelledByGeneration,
  internalError,
  newRequestId,
  notFoundError,
  reportedElsewhere,
  requestTimedOut,
  shouldLogAccess,
  storeUnavailable
} from "./request-context.js"

/**
 * Runs the request's work as a fiber of its own, registered with the generation's requests in flight
 * (src/runtime/requests-in-flight.ts), so closing the generation interrupts it; a client disconnect or
 * the `request_timeout` deadline interrupts the fiber too. A request cut off by its generation closing
 * is answered 503 when headers were not yet sent; one cut off by its deadline fails with the 504
 * `request_timeout` error.
 *
 * Why one fork and a plain timer rather than `Effect.timeoutFail`: the fork is needed anyway (the
 * generation must be able to cancel it), and a timeout race forks twice more and costs more per
 * request than the rest of this middleware together (docs/benchmarks.md).
 */
export const runInGeneration =
  (inFlight: RequestsInFlight, requestTimeout: Duration.Duration) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E | HttpError, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      // The fiber ends in an Exit, never a failure: a failed fiber nobody joins is reported by the runtime
      // as "Fiber terminated with an unhandled error" (and its cause kept alive for that), though the
      // failure is the request's answer.
      Effect.flatMap(Effect.forkDaemon(Effect.exit(app)), (fiber) => {
        let timedOut = false
        const timer = setTimeout(() => {
          timedOut = true
          fiber.unsafeInterruptAsFork(FiberId.none)
        }, Duration.toMillis(requestTimeout))
        inFlight.onCancel(NodeHttpServerRequest.toIncomingMessage(request), () =>
          fiber.unsafeInterruptAsFork(FiberId.none)
        )
        return Fiber.await(fiber).pipe(
          Effect.onInterrupt(() => Fiber.interrupt(fiber)),
          Effect.ensuring(Effect.sync(() => clearTimeout(timer))),
          Effect.flatMap((outer): Effect.Effect<HttpServerResponse.HttpServerResponse, E | HttpError> => {
            const exit = Exit.isSuccess(outer) ? outer.value : Exit.failCause(outer.cause)
            if (Exit.isSuccess(exit) || !Cause.isInterruptedOnly(exit.cause)) return exit
            return Effect.fail(timedOut ? requestTimedOut(requestTimeout) : cancelledByGeneration)
          })
        )
      })
    )

/**
 * Request id, structured access log and the one error body (src/http/request-context.ts).
 * Errors the routes do not turn into responses become the JSON error body here; defects are
 * logged with their cause and answered 500 without detail, so no secret can leak in a message — except
 * a failure for lack of the store, answered `503 store_unavailable` and counted in the outage
 * (src/store/health.ts), which logs it once, whatever route it came from.
 *
 * `mcpPath` (the public listener's): each request is counted by route and status
 * (`gateway_http_requests_total`) and, when tracing is on, is a server span of its own.
 */
export const withRequestContext =
  (accessLog: boolean, mcpPath?: string) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R | StoreHealth | HttpServerRequest.HttpServerRequest> =>
    Effect.suspend(() => {
      const requestId = newRequestId()
      return handle(app, requestId, accessLog, mcpPath).pipe(Effect.annotateLogs("request_id", requestId))
    })

const handle = <E, R>(app: HttpApp.Default<E, R>, requestId: string, accessLog: boolean, mcpPath: string | undefined) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = performance.now()
    // The access line says what was sent, when the exchange ended: 499 (as nginx logs it) when the
    // client went away before any answer.
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const sent = NodeHttpServerRequest.toServerResponse(request)
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const route = mcpPath === undefined ? undefined : routeLabel(request.url, mcpPath)
    const { tracer } = yield* Tracing
    const span =
      tracer === undefined || route === undefined
        ? undefined
        : openSpan(tracer, `${request.method} ${route}`, undefined, "server", {
            "http.request.method": request.method,
            "http.route": route
          })
    sent.once("close", () => {
      const status = sent.headersSent ? sent.statusCode : 499
      if (route !== undefined) metrics.request(route, status)
      if (span !== undefined) {
        span.attribute("http.response.status_code", status)
        closeSpan(span, status >= 500 ? String(status) : status === 499 ? "client_closed" : undefined)
      }
      if (!shouldLogAccess(accessLog, status, incoming)) return
      runFork(
        Effect.logWithLevel(accessLogLevel(status), "request").pipe(
          Effect.annotateLogs(accessFields(request.method, request.url, status, started))
        )
      )
    })
    const health = yield* StoreHealth
    const response = yield* app.pipe(
      Effect.catchAllCause((cause) => {
        const unavailable = unavailableCause(cause)
        if (unavailable === undefined) return answerFailure(cause, requestId)
        reportedElsewhere(incoming)
        return Effect.as(health.failed(unavailable), errorResponse(storeUnavailable, requestId))
      })
    )
    return HttpServerResponse.setHeader(response, "x-request-id", requestId)
  })

const answerFailure = (cause: Cause.Cause<unknown>, requestId: string) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof HttpError) return Effect.succeed(errorResponse(error, requestId))
    if (error instanceof RouteNotFound) return Effect.succeed(errorResponse(notFoundError, requestId))
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.succeed(errorResponse(cancelledByGeneration, requestId))
  return Effect.logError("unhandled failure", cause).pipe(Effect.as(errorResponse(internalError, requestId)))
}
