import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { clientAddress } from "../../auth/client-address.js"
import { type Html, html } from "../../auth/pages/html.js"
import { constantTimeEqual } from "../../crypto/hashing.js"
import { echo, SecurityLog } from "../../events/security-log.js"

/** The name of the hidden field that carries a session's synchronizer token. */
export const CSRF_FIELD = "csrf"

export const csrfField = (token: string): Html => html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`

export type CsrfReason = "origin" | "token"

/**
 * The browser's own word on where a POST comes from: `Origin` must be the admin origin; without one,
 * `Sec-Fetch-Site` must say `same-origin`; a request with neither is refused (deny on doubt: every
 * browser the console supports sends `Origin` on POST). A `Sec-Fetch-Site` other than `same-origin`
 * is refused even beside a matching `Origin`.
 */
export const sameOrigin = (headers: Readonly<Record<string, string | undefined>>, adminOrigin: string): boolean => {
  const origin = headers["origin"]
  const site = headers["sec-fetch-site"]
  if (site !== undefined && site !== "same-origin") return false
  if (origin !== undefined) return origin === adminOrigin
  return site === "same-origin"
}

/** The form's token is the session's, exactly one, compared in constant time. */
export const tokenMatches = (form: URLSearchParams, expected: string): boolean => {
  const sent = form.getAll(CSRF_FIELD)
  return sent.length === 1 && constantTimeEqual(sent[0]!, expected)
}

/**
 * `console.csrf_refused` (docs/operations.md, "Security events"): a console POST from another origin or
 * without the session's token; at most 10 lines a minute per address.
 */
export const csrfRefusedEvent = (reason: CsrfReason, path: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const address = yield* clientAddress
    yield* (yield* SecurityLog).limited(address, "console.csrf_refused", {
      client_address: address,
      reason,
      origin: echo(request.headers["origin"] ?? ""),
      path: echo(path)
    })
  })
