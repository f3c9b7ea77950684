import { Data } from "effect"
import { fetchJson } from "./fetch-json.js"

/** A token endpoint answer that is not a grant (the endpoint refused, did not answer, or answered nonsense). */
export class TokenRequestFailed extends Data.TaggedError("TokenRequestFailed")<{ readonly message: string }> {}

/** An access token's lifetime when the token endpoint's answer gives none (RFC 6749 §5.1 leaves it optional). */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 300

/** A token endpoint's grant, checked: see {@link tokenRequest}. */
export interface Grant {
  readonly access_token: string
  /** Seconds; {@link DEFAULT_TOKEN_LIFETIME_SECONDS} when the answer had none. */
  readonly expires_in: number
  readonly refresh_token?: string | undefined
  readonly scope?: string | undefined
}

/** The token endpoint's answer: a grant, or its refusal (`error`, `error_description` as given). */
export type TokenAnswer =
  | { readonly granted: true; readonly grant: Grant }
  | {
      readonly granted: false
      readonly status: number
      readonly error: string | undefined
      readonly description: string | undefined
    }

/**
 * A form POST to the token endpoint (docs/clients.md, "The bridge"), through {@link fetchJson}: no
 * redirects, a time limit and a size limit. A 200 answer must be a usable grant — `access_token` a
 * non-empty string, `token_type` Bearer (in any case), `expires_in` a positive number or absent (then
 * {@link DEFAULT_TOKEN_LIFETIME_SECONDS}), `refresh_token` and `scope` strings when present (null is
 * absent) — or it is
 * refused with TokenRequestFailed saying what is wrong. Any other status is a refusal.
 */
export const tokenRequest = async (endpoint: string, form: Readonly<Record<string, string>>): Promise<TokenAnswer> => {
  const answer = await fetchJson(endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form).toString()
  }).catch((error: Error) => {
    throw new TokenRequestFailed({ message: `the token endpoint did not answer: ${error.message}` })
  })
  const body = isRecord(answer.body) ? answer.body : {}
  if (answer.status !== 200) {
    return {
      granted: false,
      status: answer.status,
      error: typeof body["error"] === "string" ? body["error"].slice(0, 100) : undefined,
      description: typeof body["error_description"] === "string" ? body["error_description"].slice(0, 300) : undefined
    }
  }
  return { granted: true, grant: grantOf(answer.body) }
}

/** The grant in a 200 answer, or TokenRequestFailed naming the first thing wrong with it. */
export const grantOf = (body: unknown): Grant => {
  const refuse = (problem: string) =>
    new TokenRequestFailed({ message: `the token endpoint's answer is not a usable grant: ${problem}` })
  if (!isRecord(body)) throw refuse("it is not a JSON object")
  const { access_token, token_type } = body
  // An optional member given as null is absent.
  const [expires_in, refresh_token, scope] = [body["expires_in"], body["refresh_token"], body["scope"]].map(
    (value) => value ?? undefined
  )
  if (typeof access_token !== "string" || access_token === "") throw refuse("access_token is missing or empty")
  if (typeof token_type !== "string" || token_type.toLowerCase() !== "bearer") {
    throw refuse("token_type is not Bearer")
  }
  if (expires_in !== undefined && (typeof expires_in !== "number" || !Number.isFinite(expires_in) || expires_in <= 0)) {
    throw refuse("expires_in is not a positive number of seconds")
  }
  if (refresh_token !== undefined && (typeof refresh_token !== "string" || refresh_token === "")) {
    throw refuse("refresh_token is not a non-empty string")
  }
  if (scope !== undefined && typeof scope !== "string") throw refuse("scope is not a string")
  return {
    access_token,
    expires_in: expires_in ?? DEFAULT_TOKEN_LIFETIME_SECONDS,
    refresh_token,
    scope
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
