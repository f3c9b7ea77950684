import type { HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { metrics } from "../../observability/metrics.js"
import { ClientGrantRepo } from "../../store/client-grants.js"
import { UserRepo, type UserRow } from "../../store/users.js"
import { accountUsable } from "../account-access.js"
import type { AuthorizationRequest } from "../authorize/request.js"
import { startSignIn } from "../browser-session.js"
import { setSessionCookie } from "../cookies.js"
import { grantableScope } from "../held-scopes.js"
import { seeOther } from "../pages/html.js"
import { messagePage } from "../pages/message.js"
import { type LoginTransaction, PendingAuthorizations } from "../pending.js"
import { parseScopeText } from "../scopes.js"
import type { AuthSettings } from "../settings.js"

/**
 * The authorization response at the client's redirect URI (RFC 6749 §4.1.2), with `state` echoed once
 * and `iss` (RFC 9207) so the client can tell which server answered.
 */
export const clientRedirect = (
  settings: AuthSettings,
  target: Pick<AuthorizationRequest, "redirectUri" | "state">,
  fields: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse => {
  const url = new URL(target.redirectUri)
  for (const [name, value] of Object.entries(fields)) url.searchParams.append(name, value)
  if (target.state !== undefined) url.searchParams.append("state", target.state)
  url.searchParams.append("iss", settings.issuer)
  return seeOther(url.toString())
}

/** Spec Errors: a pending or disabled user's login ends with `access_denied`, reason `account_access_required`. */
export const accountAccessRequired = (settings: AuthSettings, request: AuthorizationRequest) =>
  clientRedirect(settings, request, {
    error: "access_denied",
    error_description: "account_access_required: an administrator must enable this account.",
    reason: "account_access_required"
  })

/** Consent is asked once per client and scope set, unless the client is the first-party portal. */
const consentNeeded = (settings: AuthSettings, request: AuthorizationRequest, userId: string) =>
  Effect.gen(function* () {
    if (!settings.consentRequired || request.clientId === settings.portalClientId) return false
    if (request.prompt.has("consent")) return true
    const grant = yield* (yield* ClientGrantRepo).find(userId, request.clientId)
    if (Option.isNone(grant)) return true
    const granted = new Set(parseScopeText(grant.value.scope))
    return !request.scope.every((scope) => granted.has(scope))
  })

/** Issues the code for a signed-in, enabled person and sends the browser back to the client. */
export const issueCodeAndRedirect = (
  settings: AuthSettings,
  transaction: LoginTransaction,
  request: AuthorizationRequest,
  userId: string,
  authTime: number
) =>
  Effect.gen(function* () {
    const pending = yield* PendingAuthorizations
    const code = yield* pending.issueCode({
      clientId: request.clientId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      userId,
      scope: request.scope,
      resource: request.resource,
      authTime
    })
    yield* pending.finish(transaction.id)
    return clientRedirect(settings, request, { code })
  })

/**
 * Continues an authorization for a person known to be signed in: deny, ask consent, or issue the code.
 * From here on the request's scopes are only those this person holds (src/auth/held-scopes.ts): the
 * consent page, the stored grant and the code never name more.
 */
export const continueAuthorization = (
  settings: AuthSettings,
  transaction: LoginTransaction,
  requested: AuthorizationRequest,
  user: UserRow,
  authTime: number
) =>
  Effect.gen(function* () {
    const pending = yield* PendingAuthorizations
    if (!accountUsable(user)) {
      yield* pending.finish(transaction.id)
      return accountAccessRequired(settings, requested)
    }
    const request = { ...requested, scope: yield* grantableScope(user.id, requested.scope) }
    if (yield* consentNeeded(settings, request, user.id)) {
      if (request.prompt.has("none")) {
        yield* pending.finish(transaction.id)
        return clientRedirect(settings, request, {
          error: "consent_required",
          error_description: "Consent is required."
        })
      }
      yield* pending.update({ ...transaction, request, stage: "consent", userId: user.id, authTime })
      return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
    }
    return yield* issueCodeAndRedirect(settings, transaction, request, user.id, authTime)
  })

/**
 * Both factors passed: record the browser sign-in (cookie), then continue the client's authorization,
 * or open the grants portal for a portal sign-in.
 */
export const afterAuthentication = (
  settings: AuthSettings,
  transaction: LoginTransaction,
  userId: string,
  provider: "local" | "ldap" | "upstream"
) =>
  Effect.gen(function* () {
    const found = yield* (yield* UserRepo).findById(userId)
    const now = yield* Clock.currentTimeMillis
    const request = transaction.request
    if (Option.isNone(found) || !accountUsable(found.value)) {
      yield* (yield* PendingAuthorizations).finish(transaction.id)
      return request === undefined
        ? messagePage("Account not enabled", "An administrator must enable this account.", 403)
        : accountAccessRequired(settings, request)
    }
    const signIn = yield* startSignIn(userId, now)
    metrics.signIn(provider, "success")
    const response =
      request === undefined
        ? yield* Effect.as(
            (yield* PendingAuthorizations).finish(transaction.id),
            seeOther(transaction.returnTo ?? "/sso/grants")
          )
        : yield* continueAuthorization(settings, transaction, request, found.value, now)
    return yield* setSessionCookie(settings, signIn.token, signIn.maxAgeSeconds)(response)
  })
