import { Data } from "effect"
import type { ErrorCode } from "../../http/error-codes.js"

/**
 * An error found before the redirect URI is trusted (unknown client, bad redirect URI): shown to the
 * person as a page, never redirected, so the gateway cannot be used as an open redirector.
 */
export class AuthorizePageError extends Data.TaggedError("AuthorizePageError")<{
  readonly error: ErrorCode
  readonly description: string
}> {}

/** An error reported to the client at its (trusted) redirect URI, RFC 6749 §4.1.2.1. */
export class AuthorizeRedirectError extends Data.TaggedError("AuthorizeRedirectError")<{
  readonly error: ErrorCode
  readonly description: string
}> {}
