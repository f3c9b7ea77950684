import { createHash, randomBytes } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import type { DownstreamClient } from "../../config/schema.js"
import { constantTimeEqual } from "../../crypto/hashing.js"
import { securityEvent } from "../../events/security-log.js"
import { ClientGrantRepo } from "../../store/client-grants.js"
import { RefreshTokenRepo } from "../../store/refresh-tokens.js"
import { SessionRepo } from "../../store/sessions.js"
import { UserRepo } from "../../store/users.js"
import { accountUsable } from "../account-access.js"
import type { OAuthParams } from "../authorize/params.js"
import { clientAddress } from "../client-address.js"
import { grantableScope } from "../held-scopes.js"
import { PendingAuthorizations } from "../pending.js"
import { OFFLINE_ACCESS, parseScopeText, scopeText } from "../scopes.js"
import type { AuthSettings } from "../settings.js"
import { optionalParam, requiredParam, tokenError } from "./errors.js"
import { mintAccessToken, newRefreshToken, SESSION_TTL_MS, type TokenResponseBody } from "./mint.js"

/** RFC 7636 §4.1: 43-128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

const invalidGrant = (description: string) => tokenError("invalid_grant", description)

/**
 * With consent on (`client_authorization.enabled`), the stored grant must still cover the scopes when
 * the code is exchanged: revoking a grant revokes the sessions that exist, and this stops the session a
 * code issued before the revocation would otherwise create after it. The portal client needs none.
 */
const consentStillCovers = (settings: AuthSettings, userId: string, clientId: string, scope: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (!settings.consentRequired || clientId === settings.portalClientId) return true
    const stored = yield* (yield* ClientGrantRepo).find(userId, clientId)
    if (Option.isNone(stored)) return false
    const consented = new Set(parseScopeText(stored.value.scope))
    return scope.every((name) => consented.has(name))
  })

/**
 * `grant_type=authorization_code` (RFC 6749 §4.1.3 with PKCE). A code is redeemed once, whatever the
 * outcome; presenting it again revokes the session its first redemption created (RFC 6749 §4.1.2).
 * Answers the token response's body: `/sso/token` sends it, the console (src/admin/console/sign-in.ts)
 * redeems its own code in-process.
 */
export const exchangeCode = Effect.fn("exchangeCode")(function* (
  params: OAuthParams,
  client: typeof DownstreamClient.Type,
  settings: AuthSettings
) {
  const pending = yield* PendingAuthorizations
  const sessions = yield* SessionRepo
  const users = yield* UserRepo
  const refreshTokens = yield* RefreshTokenRepo
  const code = yield* requiredParam(params, "code")
  const redirectUri = yield* requiredParam(params, "redirect_uri")
  const verifier = yield* requiredParam(params, "code_verifier")
  const resource = yield* optionalParam(params, "resource")

  const redemption = yield* pending.redeem(code)
  if (redemption._tag === "Invalid") return yield* invalidGrant("The authorization code is invalid or expired.")
  const now = yield* Clock.currentTimeMillis
  if (redemption._tag === "Replayed") {
    yield* securityEvent("auth.code_replayed", {
      client_id: client.id,
      client_address: yield* clientAddress,
      session_revoked: redemption.sessionId !== undefined
    })
    if (redemption.sessionId !== undefined) {
      yield* sessions.revoke(redemption.sessionId, "authorization_code_replay", new Date(now))
    }
    return yield* invalidGrant("The authorization code was already used; the tokens issued for it are revoked.")
  }
  const { grant, handle } = redemption
  if (grant.clientId !== client.id) return yield* invalidGrant("The authorization code was issued to another client.")
  if (grant.redirectUri !== redirectUri)
    return yield* invalidGrant("redirect_uri does not match the authorization request.")
  if (!VERIFIER.test(verifier) || !constantTimeEqual(s256(verifier), grant.codeChallenge)) {
    return yield* invalidGrant("The code_verifier does not match the code_challenge.")
  }
  if (resource !== undefined && resource !== grant.resource) {
    return yield* tokenError("invalid_target", "The resource differs from the one authorized.")
  }
  const user = yield* users.findById(grant.userId)
  if (Option.isNone(user) || !accountUsable(user.value)) return yield* invalidGrant("The account is not enabled.")
  const expiresAt = grant.authTime + SESSION_TTL_MS
  if (now >= expiresAt) return yield* invalidGrant("The sign-in is older than 8 hours; sign in again.")
  // Held scopes are read again: what the person lost since the code was issued is not in the token.
  const scope = yield* grantableScope(grant.userId, grant.scope)
  if (!(yield* consentStillCovers(settings, grant.userId, client.id, scope))) {
    return yield* invalidGrant("The person withdrew this application's access; sign in again.")
  }

  const session = {
    id: randomBytes(16).toString("base64url"),
    userId: grant.userId,
    clientId: client.id,
    resource: grant.resource,
    expiresAt
  }
  yield* sessions.insert({
    ...session,
    scope: scopeText(scope),
    authTime: new Date(grant.authTime),
    createdAt: new Date(now),
    expiresAt: new Date(expiresAt)
  })
  if (yield* pending.attachSession(handle, session.id)) {
    // Two redemptions raced: the second arrived while the first was issuing its tokens.
    yield* securityEvent("auth.code_replayed", {
      client_id: client.id,
      client_address: yield* clientAddress,
      user_id: grant.userId,
      session_revoked: true
    })
    yield* sessions.revoke(session.id, "authorization_code_replay", new Date(now))
    return yield* invalidGrant("The authorization code was used twice; the tokens issued for it are revoked.")
  }
  const refresh = scope.includes(OFFLINE_ACCESS) ? newRefreshToken() : undefined
  if (refresh !== undefined) yield* refreshTokens.insert(refresh.hash, session.id, new Date(now))
  const access = yield* mintAccessToken(settings.issuer, session, scope)
  return {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: access.expiresIn,
    scope: scopeText(scope),
    ...(refresh === undefined ? {} : { refresh_token: refresh.token })
  } satisfies TokenResponseBody
})
