import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { constantTimeEqual, sha256Hex } from "../../crypto/hashing.js"
import type { OAuthParams } from "../authorize/params.js"
import type { AuthorizationRequest } from "../authorize/request.js"
import { addressBucket, clientAddress } from "../client-address.js"
import { readBrowserCookie } from "../cookies.js"
import type { FormContext } from "../pages/login.js"
import { messagePage } from "../pages/message.js"
import { type LoginTransaction, PendingAuthorizations } from "../pending.js"
import type { AuthSettings } from "../settings.js"
import { PageResponse } from "./page-response.js"

const fail = (title: string, text: string, status: number) =>
  Effect.fail(new PageResponse({ response: messagePage(title, text, status) }))

const expired = () =>
  fail(
    "Sign-in expired",
    "This sign-in is unknown or older than 5 minutes. Go back to the application and start again.",
    400
  )

/**
 * Opens a login transaction for this browser (its binding cookie's value) and client address; when the
 * address already has too many open, a 429 page with `Retry-After` instead (src/auth/pending.ts).
 */
export const openTransaction = (binding: string, request: AuthorizationRequest | undefined) =>
  Effect.gen(function* () {
    const address = addressBucket(yield* clientAddress)
    return yield* (yield* PendingAuthorizations).start(sha256Hex(binding), request, address)
  }).pipe(
    Effect.catchTag("TooManySignIns", (error) =>
      Effect.fail(
        new PageResponse({
          response: HttpServerResponse.setHeader(
            messagePage(
              "Too many sign-ins",
              "Too many sign-ins are in progress from your network. Finish one, or try again in a few minutes.",
              429
            ),
            "retry-after",
            String(error.retryAfterSeconds)
          )
        })
      )
    )
  )

/**
 * The transaction a page or form names, continued only by the browser that started it (its binding
 * cookie), so a link to someone else's sign-in is useless.
 */
export const requireTransaction = (settings: AuthSettings, loginId: string | undefined) =>
  Effect.gen(function* () {
    if (loginId === undefined || loginId.length > 64) return yield* expired()
    const found = yield* (yield* PendingAuthorizations).find(loginId)
    if (Option.isNone(found)) return yield* expired()
    const request = yield* HttpServerRequest.HttpServerRequest
    const browser = readBrowserCookie(settings, request.cookies)
    if (browser === undefined || !constantTimeEqual(sha256Hex(browser), found.value.browserBinding)) {
      return yield* fail(
        "Sign-in started elsewhere",
        "This sign-in was started in another browser. Start again here.",
        400
      )
    }
    return found.value
  })

/**
 * Every form post: from this origin (Fetch metadata and Origin, where the browser sends them) and
 * carrying the anti-CSRF token of its transaction or session.
 */
export const requireSameOrigin = (settings: AuthSettings) =>
  Effect.gen(function* () {
    if (!fromOwnOrigin(settings, yield* HttpServerRequest.HttpServerRequest)) {
      return yield* fail("Request refused", "This form was not submitted from the gateway's own page.", 403)
    }
  })

/** Whether the browser says the request comes from the gateway's own pages (Fetch metadata, Origin). */
export const fromOwnOrigin = (settings: AuthSettings, request: HttpServerRequest.HttpServerRequest): boolean => {
  const site = request.headers["sec-fetch-site"]
  const origin = request.headers["origin"]
  return !((site !== undefined && site !== "same-origin") || (origin !== undefined && origin !== settings.origin))
}

/** Whether the form carries exactly one `csrf` field equal to `expected` (compared in constant time). */
export const csrfMatches = (expected: string, params: OAuthParams): boolean => {
  const found = params.single("csrf")
  return found._tag === "Value" && constantTimeEqual(found.value, expected)
}

export const requireCsrf = (expected: string, params: OAuthParams) =>
  csrfMatches(expected, params)
    ? Effect.void
    : fail("Request refused", "The form is stale or was not issued by the gateway. Reload the page and try again.", 403)

/** Loads a posted form's transaction and checks origin, binding and anti-CSRF token. */
export const postedTransaction = (settings: AuthSettings, params: OAuthParams) =>
  Effect.gen(function* () {
    yield* requireSameOrigin(settings)
    const login = params.single("login")
    const transaction = yield* requireTransaction(settings, login._tag === "Value" ? login.value : undefined)
    yield* requireCsrf(transaction.csrf, params)
    return transaction
  })

/** A CSP `form-action` source for a redirect URI: its origin, or its scheme for private-use schemes. */
export const formTargetOf = (redirectUri: string): ReadonlyArray<string> => {
  const url = URL.parse(redirectUri)
  if (url === null) return []
  if (url.protocol !== "http:" && url.protocol !== "https:") return [url.protocol]
  // CSP host sources cannot name an IPv6 literal: fall back to the scheme.
  return url.hostname.startsWith("[") ? [url.protocol] : [url.origin]
}

export const formContext = (transaction: LoginTransaction): FormContext => ({
  login: transaction.id,
  csrf: transaction.csrf,
  clientId: transaction.request?.clientId,
  formTargets: transaction.request === undefined ? [] : formTargetOf(transaction.request.redirectUri)
})
