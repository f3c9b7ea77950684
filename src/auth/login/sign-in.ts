import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { APPROVAL_ID_PATTERN } from "../../approvals/intent.js"
import { base32Encode, otpauthUri } from "../../identity/local/totp.js"
import { REVIEW_RETURN_PATH } from "../../sources/review/paths.js"
import { currentSignIn } from "../browser-session.js"
import { browserBinding, setBrowserCookie } from "../cookies.js"
import { seeOther } from "../pages/html.js"
import { consentPage, enrollPage, mfaPage, signInPage } from "../pages/login.js"
import { type LoginTransaction, PendingAuthorizations } from "../pending.js"
import { type AuthSettings, authSettings } from "../settings.js"
import { answerPage } from "./page-response.js"
import { formContext, openTransaction, requireTransaction } from "./transaction.js"

/** The page for where a transaction stands, optionally with an error from the form just posted. */
export const stagePage = (settings: AuthSettings, transaction: LoginTransaction, error?: string, status = 200) => {
  const form = formContext(transaction)
  const request = transaction.request
  switch (transaction.stage) {
    case "mfa":
      return mfaPage(form, error, status)
    case "enroll": {
      const secret = transaction.enrollSecret ?? new Uint8Array()
      const account = transaction.username ?? "account"
      return enrollPage(
        form,
        {
          secretBase32: base32Encode(secret),
          otpauthUri: otpauthUri(secret, `gateway ${new URL(settings.issuer).host}`, account)
        },
        error,
        status
      )
    }
    case "consent":
      return request === undefined
        ? signInPage(form, settings, error, status)
        : consentPage({ ...form, clientId: request.clientId }, request.scope, request.resource)
    default:
      return signInPage(form, settings, error, status)
  }
}

/**
 * The review pages a portal sign-in may return to (nothing else: no open redirect): write approvals'
 * and configuration changes' (docs/tool-sources.md, "Configuration review").
 */
const PORTAL_PATH = new RegExp(`^/sso/approvals(/${APPROVAL_ID_PATTERN})?$`)

/** `next=` of a portal sign-in, when it is exactly one of the gateway's own review pages. */
export const portalPathOf = (values: ReadonlyArray<string>): string | undefined =>
  values.length === 1 && (PORTAL_PATH.test(values[0]!) || REVIEW_RETURN_PATH.test(values[0]!)) ? values[0] : undefined

/**
 * `GET /sso`: the start of the browser flow (docs/authorization-server.md, "Paths"). With `login=<id>` it shows that
 * transaction's current step; without, it starts a sign-in to the grants portal (or opens the portal
 * when this browser is signed in already).
 */
export const signInEndpoint = answerPage(
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const settings = yield* authSettings
    const logins = new URL(request.url, settings.origin).searchParams.getAll("login")
    if (logins.length > 0) {
      const transaction = yield* requireTransaction(settings, logins.length === 1 ? logins[0] : undefined)
      return stagePage(settings, transaction)
    }
    const next = portalPathOf(new URL(request.url, settings.origin).searchParams.getAll("next"))
    if (Option.isSome(yield* currentSignIn(settings))) return seeOther(next ?? "/sso/grants")
    const binding = yield* browserBinding(settings)
    const opened = yield* openTransaction(binding.value, undefined)
    const transaction = next === undefined ? opened : { ...opened, returnTo: next }
    if (next !== undefined) yield* (yield* PendingAuthorizations).update(transaction)
    const response = stagePage(settings, transaction)
    return binding.isNew ? yield* setBrowserCookie(settings, binding.value)(response) : response
  })
).pipe(Effect.withSpan("signInEndpoint"))
