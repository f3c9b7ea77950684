import { HttpServerResponse } from "@effect/platform"
import { Data } from "effect"

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
  readonly code: string
  readonly description: string
  readonly headers?: Readonly<Record<string, string>>
}> {}

export const errorResponse = (
  status: number,
  code: string,
  description: string,
  requestId?: string,
  headers?: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse => {
  const body: ErrorBody =
    requestId === undefined
      ? { error: code, error_description: description }
      : { error: code, error_description: description, request_id: requestId }
  return HttpServerResponse.unsafeJson(body, {
    status,
    headers: { "cache-control": "no-store", ...headers }
  })
}

export const notFound = (requestId?: string) =>
  errorResponse(404, "not_found", "No such path on this gateway.", requestId)
