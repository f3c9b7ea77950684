import { randomUUID } from "node:crypto"
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RouteNotFound } from "@effect/platform/HttpServerError"
import { Cause, Duration, Effect, Exit, Fiber, FiberId, FiberSet, LogLevel, Option } from "effect"
import { formatDuration } from "../config/duration.js"
import { errorResponse, HttpError, notFound } from "./error-body.js"

/**
 * Runs the request's work as a fiber of the generation (its FiberSet), so closing the generation's
 * scope interrupts it; a client disconnect or the `request_timeout` deadline interrupts the fiber too.
 * A request cut off by its generation closing is answered 503 when headers were not yet sent; one cut
 * off by its deadline fails with the 504 `request_timeout` error.
 *
 * Why one fork and a plain timer rather than `Effect.timeoutFail`: the fork is needed anyway (the
 * generation must own the fiber), and a timeout race forks twice more and costs more per request than
 * the rest of this middleware together (docs/benchmarks.md). The timer only interrupts that one fiber.
 */
export const runInGeneration =
  (fibers: FiberSet.FiberSet, requestTimeout: Duration.Duration) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E | HttpError, R> =>
    Effect.flatMap(FiberSet.run(fibers, app), (fiber) => {
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        fiber.unsafeInterruptAsFork(FiberId.none)
      }, Duration.toMillis(requestTimeout))
      return Fiber.await(fiber).pipe(
        Effect.onInterrupt(() => Fiber.interrupt(fiber)),
        Effect.ensuring(Effect.sync(() => clearTimeout(timer))),
        Effect.flatMap((exit): Effect.Effect<HttpServerResponse.HttpServerResponse, E | HttpError> => {
          if (Exit.isSuccess(exit) || !Cause.isInterruptedOnly(exit.cause)) return exit
          return timedOut ? Effect.fail(requestTimedOut(requestTimeout)) : Effect.succeed(cancelledByGeneration())
        })
      )
    })

const requestTimedOut = (requestTimeout: Duration.Duration) =>
  new HttpError({
    status: 504,
    code: "request_timeout",
    description: `The request did not complete within request_timeout (${formatDuration(requestTimeout)}).`
  })

const cancelledByGeneration = () =>
  errorResponse(503, "unavailable", "The request was cancelled because the gateway is reloading or stopping.")

// Access lines are debug, and built only when debug is on, so a busy gateway does not pay for them;
// 5xx answers are always logged.
const logLevelFor = (status: number) => (status >= 500 ? LogLevel.Error : LogLevel.Debug)

/**
 * Request id, structured access log and the one error body.
 * Errors the routes do not turn into responses become the JSON error body here; defects are
 * logged with their cause and answered 500 without detail, so no secret can leak in a message.
 */
export const withRequestContext =
  (accessLog: boolean) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
    Effect.suspend(() => {
      const requestId = randomUUID()
      return handle(app, requestId, accessLog).pipe(Effect.annotateLogs("request_id", requestId))
    })

const handle = <E, R>(app: HttpApp.Default<E, R>, requestId: string, accessLog: boolean) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = performance.now()
    const response = yield* app.pipe(Effect.catchAllCause((cause) => answerFailure(cause, requestId)))
    const status = response.status
    if (accessLog || status >= 500) {
      const elapsed = Math.round((performance.now() - started) * 1000) / 1000
      const path = request.url.split("?", 1)[0]
      yield* Effect.logWithLevel(logLevelFor(status), "request").pipe(
        Effect.annotateLogs({ method: request.method, path, status, ms: elapsed })
      )
    }
    return HttpServerResponse.setHeader(response, "x-request-id", requestId)
  })

const answerFailure = (cause: Cause.Cause<unknown>, requestId: string) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof HttpError) {
      return Effect.succeed(errorResponse(error.status, error.code, error.description, requestId, error.headers))
    }
    if (error instanceof RouteNotFound) return Effect.succeed(notFound(requestId))
  }
  if (Cause.isInterruptedOnly(cause)) {
    return Effect.succeed(errorResponse(503, "unavailable", "The request was cancelled.", requestId))
  }
  return Effect.logError("unhandled failure", cause).pipe(
    Effect.as(errorResponse(500, "internal_error", "The gateway failed to handle this request.", requestId))
  )
}
