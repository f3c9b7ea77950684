import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { constantTimeEqual, sha256Hex } from "../../crypto/hashing.js"
import { Sealer } from "../../crypto/sealer.js"
import { SecurityLog, securityEvent } from "../../events/security-log.js"
import { LocalAccountAdmin } from "../../identity/local/account-admin.js"
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../../identity/local/password.js"
import { base32Encode, otpauthUri } from "../../identity/local/totp.js"
import type { UserRow } from "../../store/users.js"
import { clientAddress } from "../client-address.js"
import { browserBinding, readBrowserCookie, setBrowserCookie } from "../cookies.js"
import { enrolledPage, enrolmentPage } from "../pages/enrol.js"
import { messagePage } from "../pages/message.js"
import { type AuthSettings, authSettings } from "../settings.js"
import { LoginThrottle } from "../throttle.js"
import { readPageForm } from "./form.js"
import { answerPage, PageResponse } from "./page-response.js"
import { requireSameOrigin } from "./transaction.js"

/** Pages of this flow never send their address (it holds the link's token) as Referer: the origin alone (src/auth/pages/html.ts, `referrer`). */
const originOnlyReferrer = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeader(response, "referrer-policy", "strict-origin")

const deadLink = () =>
  new PageResponse({
    response: originOnlyReferrer(
      messagePage(
        "Link not valid",
        "This enrolment link does not work any more: it was used, it expired, a newer one replaced it, or the account was disabled. Ask your administrator for a new link.",
        410
      )
    )
  })

/**
 * The form's anti-CSRF token: bound to this browser (its binding cookie, as the sign-in's transactions
 * are) and to the link, so a page elsewhere cannot post it, and the form of one link cannot post another's.
 */
const csrfOf = (browser: string, tokenHash: string) => sha256Hex(`enrolment-csrf\n${browser}\n${tokenHash}`)

/** The token a request names, once: in the query on GET, in the form on POST. */
const singleToken = (values: ReadonlyArray<string>) => (values.length === 1 ? values[0]! : "")

const show = (
  settings: AuthSettings,
  user: UserRow,
  token: string,
  browser: string,
  offered: { readonly secret: Uint8Array; readonly sealed: string },
  error?: string,
  status = 200
) => {
  const username = user.username ?? ""
  return originOnlyReferrer(
    enrolmentPage(
      { token, sealedSecret: offered.sealed, csrf: csrfOf(browser, sha256Hex(token)), username },
      {
        secretBase32: base32Encode(offered.secret),
        otpauthUri: otpauthUri(offered.secret, `gateway ${new URL(settings.issuer).host}`, username)
      },
      error,
      status
    )
  )
}

/**
 * `GET /sso/enrol?token=…` (docs/local-accounts.md): the enrolment form of a live link, with a new TOTP
 * secret to add to an authenticator app. A dead link (used, expired, replaced, account disabled) is a
 * 410 page. The token is never logged: the access line and the trace carry the path without its query.
 */
export const enrolmentFormEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const request = yield* HttpServerRequest.HttpServerRequest
    const token = singleToken(new URL(request.url, settings.origin).searchParams.getAll("token"))
    const accounts = yield* LocalAccountAdmin
    const user = yield* accounts.openLink(Redacted.make(token))
    if (Option.isNone(user)) return yield* deadLink()
    const binding = yield* browserBinding(settings)
    const response = show(settings, user.value, token, binding.value, accounts.offerSecret(Redacted.make(token)))
    return binding.isNew ? yield* setBrowserCookie(settings, binding.value)(response) : response
  })
).pipe(Effect.withSpan("enrolmentFormEndpoint"))

/**
 * `POST /sso/enrol`: checks origin and anti-CSRF token, counts the attempt against the account like a
 * sign-in (src/auth/throttle.ts), checks the password (typed twice, docs/local-accounts.md) and the
 * code, then uses the link up (src/identity/local/account-admin.ts, `enrol`).
 */
export const enrolEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    yield* requireSameOrigin(settings)
    const params = yield* readPageForm
    const request = yield* HttpServerRequest.HttpServerRequest
    const token = params.single("token")
    const text = token._tag === "Value" ? token.value : ""
    const accounts = yield* LocalAccountAdmin
    const address = yield* clientAddress
    const throttle = yield* LoginThrottle
    const user = yield* accounts.openLink(Redacted.make(text))
    if (Option.isNone(user)) {
      // Posts of dead links count like wrong passwords, per address under one name; past the limit, 429.
      const attempt = yield* Effect.either(throttle.reserve("enrolment-link", address))
      yield* (yield* SecurityLog).limited(address, "auth.enrolment_refused", {
        client_address: address,
        reason: attempt._tag === "Left" ? "throttled" : "link_dead"
      })
      if (attempt._tag === "Left") {
        return HttpServerResponse.setHeader(
          originOnlyReferrer(messagePage("Too many attempts", "Too many attempts. Try again later.", 429)),
          "retry-after",
          String(attempt.left.retryAfterSeconds)
        )
      }
      return yield* deadLink()
    }
    const browser = readBrowserCookie(settings, request.cookies)
    const csrf = params.single("csrf")
    if (
      browser === undefined ||
      csrf._tag !== "Value" ||
      !constantTimeEqual(csrf.value, csrfOf(browser, sha256Hex(text)))
    ) {
      return yield* new PageResponse({
        response: originOnlyReferrer(
          messagePage(
            "Request refused",
            "The form is stale or was not issued by the gateway. Open the enrolment link again.",
            403
          )
        )
      })
    }
    const sealer = yield* Sealer
    const who = { client_address: address, user_id: user.value.id }
    const posted = params.single("secret")
    const sealedSecret = posted._tag === "Value" ? posted.value : ""
    // The same secret is offered again when the form is shown again, so a scanned QR code stays valid.
    const offered = yield* sealer.open(sealedSecret, `enrolment_totp:${sha256Hex(text)}`).pipe(
      Effect.map((secret) => ({ secret, sealed: sealedSecret })),
      Effect.orElseSucceed(() => accounts.offerSecret(Redacted.make(text)))
    )
    const again = (error: string, status: number) =>
      new PageResponse({ response: show(settings, user.value, text, browser, offered, error, status) })

    const username = user.value.username ?? ""
    const attempt = yield* Effect.either(throttle.reserve(username, address))
    if (attempt._tag === "Left") {
      yield* (yield* SecurityLog).limited(address, "auth.enrolment_refused", { ...who, reason: "throttled" })
      return yield* new PageResponse({
        response: HttpServerResponse.setHeader(
          show(
            settings,
            user.value,
            text,
            browser,
            offered,
            `Too many failed attempts. Try again in ${Math.ceil(attempt.left.retryAfterSeconds / 60)} minute(s).`,
            429
          ),
          "retry-after",
          String(attempt.left.retryAfterSeconds)
        )
      })
    }
    const password = params.single("password")
    const repeated = params.single("password_again")
    const first = password._tag === "Value" ? password.value : ""
    const length = [...first].length
    const passwordProblem =
      length < MIN_PASSWORD_LENGTH
        ? `The password must be at least ${MIN_PASSWORD_LENGTH} characters.`
        : length > MAX_PASSWORD_LENGTH
          ? `The password must be at most ${MAX_PASSWORD_LENGTH} characters.`
          : repeated._tag !== "Value" || !constantTimeEqual(repeated.value, first)
            ? "The two passwords differ. Type the same password twice."
            : undefined
    if (passwordProblem !== undefined) {
      // Not a guess at anything: the attempt is given back.
      yield* throttle.release(attempt.right)
      return yield* again(passwordProblem, 400)
    }
    const code = params.single("code")
    const outcome = yield* accounts.enrol({
      token: Redacted.make(text),
      password: Redacted.make(first),
      sealedSecret: offered.sealed,
      code: code._tag === "Value" ? code.value.replace(/\s/g, "") : ""
    })
    if (outcome._tag === "Enrolled") {
      yield* throttle.succeeded(attempt.right)
      return originOnlyReferrer(enrolledPage(username))
    }
    if (outcome.reason === "link_dead") {
      yield* throttle.release(attempt.right)
      return yield* deadLink()
    }
    yield* securityEvent("auth.enrolment_refused", { ...who, reason: outcome.reason })
    return yield* again("That code is not valid. Use the current code from your app.", 401)
  })
).pipe(Effect.withSpan("enrolEndpoint"))
