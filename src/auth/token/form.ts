import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { bodyText, notUtf8Description } from "../../http/read-body.js"
import { OAuthParams } from "../authorize/params.js"
import { tokenError } from "./errors.js"

/** Token and form requests are small; anything larger is not a legitimate request. */
export const MAX_FORM_BYTES = 16 * 1024

/**
 * Reads an `application/x-www-form-urlencoded` body (RFC 6749 §3.2) into `OAuthParams`, which refuses
 * repeated parameters. Other content types, oversized or unreadable bodies are `invalid_request`.
 */
export const readForm = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const type = (request.headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase()
  if (type !== "application/x-www-form-urlencoded") {
    return yield* tokenError("invalid_request", "The body must be application/x-www-form-urlencoded.")
  }
  const length = Number(request.headers["content-length"] ?? "0")
  if (length > MAX_FORM_BYTES) return yield* tokenError("invalid_request", "The request body is too large.")
  const text = yield* bodyText(MAX_FORM_BYTES).pipe(
    Effect.mapError((error) =>
      tokenError(
        "invalid_request",
        error.reason === "too_large"
          ? "The request body is too large."
          : error.reason === "not_utf8"
            ? notUtf8Description
            : "The request body could not be read."
      )
    )
  )
  return OAuthParams.fromSearch(new URLSearchParams(text))
})
