import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, HashMap, Option, Schema } from "effect"
import type { ErrorCode } from "../http/error-codes.js"

/**
 * The Management API's errors: the gateway's one error body (docs/errors.md), one schema per status
 * so the OpenAPI document lists each. `error` is a stable code (docs/management-api.md, "Errors").
 */
const ErrorBody = Schema.Struct({
  error: Schema.String,
  error_description: Schema.String,
  request_id: Schema.optional(Schema.String)
}).annotations({ identifier: "ErrorBody" })
type ErrorBody = typeof ErrorBody.Type

/** A refused Management API request: its status and the error body it is answered with. */
export class ApiFailure {
  constructor(
    readonly status: ApiStatus,
    readonly body: ErrorBody
  ) {}
}

export type ApiStatus = 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 428 | 429

/**
 * The schema of one status: the body on the wire, an ApiFailure of that status inside. Matching is by
 * status (`instanceof` and the number), never by shape, since every body has the same fields.
 */
const failureOf = (status: ApiStatus, description: string) =>
  Schema.transform(
    ErrorBody,
    Schema.declare((value): value is ApiFailure => value instanceof ApiFailure && value.status === status),
    {
      strict: true,
      decode: (body) => new ApiFailure(status, body),
      encode: (failure) => failure.body
    }
  ).annotations(HttpApiSchema.annotations({ status, description }))

export const BadRequest = failureOf(400, "Malformed body, unknown field, wrong type or broken rule")
export const Unauthorized = failureOf(401, "No token, or an invalid or expired one")
export const Forbidden = failureOf(403, "The token's user is not an administrator now")
export const NotFound = failureOf(404, "No such identity")
export const Conflict = failureOf(409, "last_administrator, name_taken, enrolment_pending")
export const PreconditionFailed = failureOf(412, "If-Match names an older revision")
export const PayloadTooLarge = failureOf(413, "Body over 1 MiB")
export const UnsupportedMediaType = failureOf(415, "Body is not application/json")
export const PreconditionRequired = failureOf(428, "A write without If-Match")
export const TooManyRequests = failureOf(
  429,
  "Past a limit on refused attempts; the description and Retry-After say when"
)

/** The request id the request pipeline put on the log annotations (src/http/middleware.ts). */
export const requestId = Effect.map(FiberRef.get(FiberRef.currentLogAnnotations), (annotations) => {
  const value = Option.getOrUndefined(HashMap.get(annotations, "request_id"))
  return typeof value === "string" ? value : undefined
})

/** Fails with the API error `status`/`code`, carrying the request's id. */
export const apiError = (status: ApiStatus, code: ErrorCode, description: string) =>
  Effect.flatMap(requestId, (id) =>
    Effect.fail(
      new ApiFailure(
        status,
        id === undefined
          ? { error: code, error_description: description }
          : { error: code, error_description: description, request_id: id }
      )
    )
  )
