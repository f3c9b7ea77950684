import { randomUUID } from "node:crypto"
import { type Duration, LogLevel } from "effect"
import { formatDuration } from "../config/duration.js"
import { HttpError } from "./error-body.js"

/**
 * What every request shares, whichever pipeline serves it — the Effect router's middleware
 * (src/http/middleware.ts) or the plain `POST /mcp` handler (src/mcp/edge/post.ts): its id, why it was cut
 * off, how its error body is written and how its access line is logged. Written once, here.
 */

/** The id of one request: the `X-Request-Id` header, the error body's `request_id`, every log line's. */
export const newRequestId = (): string => randomUUID()

/** The request ran past `request_timeout`. */
export const requestTimedOut = (requestTimeout: Duration.Duration) =>
  new HttpError({
    status: 504,
    code: "request_timeout",
    description: `The request did not complete within request_timeout (${formatDuration(requestTimeout)}).`
  })

/** The request's generation closed under it (a reload's drain ended, or shutdown). */
export const cancelledByGeneration = new HttpError({
  status: 503,
  code: "unavailable",
  description: "The request was cancelled because the gateway is reloading or stopping."
})

/** How long a client is asked to wait before retrying while the store does not answer. */
export const STORE_RETRY_AFTER_SECONDS = 2

/**
 * The store did not answer (src/store/unavailable.ts says which failures mean that): a temporary
 * condition, so 503 with `Retry-After` rather than 500. The outage is logged once (src/store/health.ts).
 */
export const storeUnavailable = new HttpError({
  status: 503,
  code: "store_unavailable",
  description: "The gateway's database is not answering; retry later.",
  headers: { "retry-after": String(STORE_RETRY_AFTER_SECONDS) }
})

/** Anything unexpected; the details are in the log line with the same request id. */
export const internalError = new HttpError({
  status: 500,
  code: "internal_error",
  description: "The gateway failed to handle this request."
})

export const notFoundError = new HttpError({
  status: 404,
  code: "not_found",
  description: "No such path on this gateway."
})

/**
 * Access lines are `debug` (and built only when debug is on). 5xx answers are always logged: `warn` for
 * 503, which the gateway gives on purpose (not ready, reloading, an issuer's keys not loaded yet), and
 * `error` for the others, which are failures — except answers whose cause has log lines of its own
 * (`reportedElsewhere`): `/readyz`, whose changes are logged (src/runtime/readiness.ts), and requests
 * refused for lack of the store, an outage logged once (src/store/health.ts). A probe or a client
 * retrying in a loop would otherwise write a line per answer.
 */
export const accessLogLevel = (status: number): LogLevel.LogLevel =>
  status === 503 ? LogLevel.Warning : status >= 500 ? LogLevel.Error : LogLevel.Debug

const loggedElsewhere = new WeakSet<object>()

/** Marks a request (its Node `IncomingMessage`) whose answer's cause is logged by its own lines. */
export const reportedElsewhere = (request: object): void => {
  loggedElsewhere.add(request)
}

export const shouldLogAccess = (debug: boolean, status: number, request?: object): boolean =>
  debug || (status >= 500 && (request === undefined || !loggedElsewhere.has(request)))

/** The fields of an access line: the path without its query (queries can carry secrets). */
export const accessFields = (method: string, url: string, status: number, startedMs: number) => ({
  method,
  path: url.split("?", 1)[0],
  status,
  ms: Math.round((performance.now() - startedMs) * 1000) / 1000
})
