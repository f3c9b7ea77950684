import { Effect } from "effect"
import { HttpError } from "../../http/error-body.js"
import type { ErrorCode } from "../../http/error-codes.js"
import { describeProblem, type OAuthParams } from "../authorize/params.js"

/**
 * Token endpoint errors in RFC 6749 §5.2 form. The gateway's one error body already is that shape
 * (docs/errors.md) and is sent with `Cache-Control: no-store`.
 */
export const tokenError = (error: ErrorCode, description: string, status = 400) =>
  new HttpError({
    status,
    code: error,
    description,
    headers:
      status === 401
        ? { "www-authenticate": 'Bearer error="invalid_client"', pragma: "no-cache" }
        : { pragma: "no-cache" }
  })

/** One non-empty, non-repeated value of a required form parameter, or `invalid_request`. */
export const requiredParam = (params: OAuthParams, name: string): Effect.Effect<string, HttpError> => {
  const found = params.required(name)
  return found._tag === "Value"
    ? Effect.succeed(found.value)
    : Effect.fail(
        tokenError("invalid_request", describeProblem(found._tag === "Problem" ? found.problem : "missing", name))
      )
}

/** An optional form parameter: undefined when absent, `invalid_request` when repeated or oversized. */
export const optionalParam = (params: OAuthParams, name: string): Effect.Effect<string | undefined, HttpError> => {
  const found = params.single(name)
  return found._tag === "Problem"
    ? Effect.fail(tokenError("invalid_request", describeProblem(found.problem, found.name)))
    : Effect.succeed(found._tag === "Value" ? found.value : undefined)
}
