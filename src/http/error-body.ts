import { HttpServerResponse } from "@effect/platform"
import { Data } from "effect"
import type { ErrorCode } from "./error-codes.js"

/**
 * The one error body the gateway produces for its own errors (docs/errors.md):
 * `{"error": "<code>", "error_description": "<text>", "request_id": "<id>"}`.
 * It is the RFC 6749 §5.2 shape plus a request id, so OAuth endpoints and everything else agree.
 */
export interface ErrorBody {
  readonly error: string
  readonly error_description: string
  readonly request_id?: string
}

/** An error the gateway answers itself, with its HTTP status. */
export class HttpError extends Data.TaggedError("HttpError")<{
  readonly status: number
  readonly code: ErrorCode
  readonly description: string
  readonly headers?: Readonly<Record<string, string>>
}> {}

/** The one error body (docs/errors.md): `{error, error_description, request_id}`. */
export const errorBodyText = (error: HttpError, requestId?: string): string =>
  JSON.stringify(
    requestId === undefined
      ? { error: error.code, error_description: error.description }
      : { error: error.code, error_description: error.description, request_id: requestId }
  )

/** The headers every error answer carries, and the error's own (a challenge, `Allow`, `Retry-After`). */
export const errorHeaders = (error: HttpError): Readonly<Record<string, string>> => ({
  "cache-control": "no-store",
  ...error.headers
})

/**
 * The Effect pipeline's error answer. The `POST /mcp` handler writes the same body and headers
 * (src/mcp/edge/reply.ts) with `errorBodyText` and `errorHeaders`.
 */
export const errorResponse = (error: HttpError, requestId?: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(errorBodyText(error, requestId), {
    status: error.status,
    contentType: "application/json",
    headers: errorHeaders(error)
  })
