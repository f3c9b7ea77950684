import { Clock, Effect, Option } from "effect"
import type { DownstreamClient } from "../../config/schema.js"
import { sha256Hex } from "../../crypto/hashing.js"
import { securityEvent } from "../../events/security-log.js"
import { metrics } from "../../observability/metrics.js"
import { AccessState } from "../../policy/access-state.js"
import { RefreshTokenRepo } from "../../store/refresh-tokens.js"
import { SessionRepo } from "../../store/sessions.js"
import { UserRepo } from "../../store/users.js"
import { accountUsable } from "../account-access.js"
import type { OAuthParams } from "../authorize/params.js"
import { clientAddress } from "../client-address.js"
import { grantableScope } from "../held-scopes.js"
import { grantScope, OFFLINE_ACCESS, parseScopeText, scopeText } from "../scopes.js"
import type { AuthSettings } from "../settings.js"
import { optionalParam, requiredParam, tokenError } from "./errors.js"
import { mintAccessToken, newRefreshToken, type TokenResponseBody } from "./mint.js"

const invalidGrant = (description: string) => tokenError("invalid_grant", description)

/**
 * `grant_type=refresh_token` (docs/authorization-server.md, "Token endpoint"). Rotation only within the 8-hour session
 * and with `offline_access`; the old token is consumed by a conditional UPDATE, and a consumed token
 * presented again (reuse, or the loser of a concurrent race) revokes the whole session. Answers the
 * token response's body (`/sso/token`, and the console's in-process renewal).
 */
export const refreshTokens = Effect.fn("refreshTokens")(function* (
  params: OAuthParams,
  client: typeof DownstreamClient.Type,
  settings: AuthSettings
) {
  const sessions = yield* SessionRepo
  const users = yield* UserRepo
  const repo = yield* RefreshTokenRepo
  const presented = yield* requiredParam(params, "refresh_token")
  const requestedScope = yield* optionalParam(params, "scope")
  const resource = yield* optionalParam(params, "resource")
  const hash = sha256Hex(presented)

  const owner = yield* repo.findSessionId(hash)
  if (Option.isNone(owner)) return yield* invalidGrant("The refresh token is invalid.")
  const found = yield* sessions.find(owner.value.session_id)
  if (Option.isNone(found)) return yield* invalidGrant("The refresh token is invalid.")
  const session = found.value
  const now = yield* Clock.currentTimeMillis
  if (session.client_id !== client.id) return yield* invalidGrant("The refresh token was issued to another client.")
  if (session.revoked_at !== null) return yield* invalidGrant("The session was revoked; sign in again.")
  if (now >= session.expires_at.getTime()) return yield* invalidGrant("The 8-hour session ended; sign in again.")
  const granted = parseScopeText(session.scope)
  if (!granted.includes(OFFLINE_ACCESS)) return yield* invalidGrant("offline_access was not granted.")
  const user = yield* users.findById(session.user_id)
  if (Option.isNone(user) || !accountUsable(user.value)) return yield* invalidGrant("The account is not enabled.")
  if (resource !== undefined && resource !== session.resource) {
    return yield* tokenError("invalid_target", "The resource differs from the one authorized.")
  }
  const narrowed = grantScope(requestedScope, granted)
  if (
    narrowed._tag === "Malformed" ||
    (requestedScope !== undefined && narrowed.granted.length !== parseScopeText(requestedScope).length)
  ) {
    return yield* tokenError("invalid_scope", "A refresh may only narrow the granted scope.")
  }
  // Organization memberships older than enterprise_membership_max_age stop refresh (docs/access-policy.md, "Rules").
  const holder = yield* (yield* AccessState).grantOfUser(session.user_id)
  if (holder === undefined || !holder.active) return yield* invalidGrant("The account is not enabled.")
  if (holder.staleAt !== undefined && now >= holder.staleAt) {
    return yield* invalidGrant("The account's organization memberships must be confirmed again: sign in again.")
  }
  // Held scopes are read on every refresh: one the person lost since sign-in is not renewed.
  const scope = yield* grantableScope(session.user_id, requestedScope === undefined ? granted : narrowed.granted)

  const next = newRefreshToken()
  const rotation = yield* repo.rotate(hash, next.hash, new Date(now))
  if (rotation._tag === "Unknown") return yield* invalidGrant("The refresh token is invalid.")
  if (rotation._tag === "Reused") {
    yield* securityEvent("auth.refresh_reused", {
      client_id: client.id,
      client_address: yield* clientAddress,
      user_id: session.user_id,
      session_id: rotation.sessionId
    })
    yield* sessions.revoke(rotation.sessionId, "refresh_token_reuse", new Date(now))
    return yield* invalidGrant("The refresh token was already used; the session is revoked. Sign in again.")
  }
  yield* Effect.sync(() => metrics.refreshRotated())
  const access = yield* mintAccessToken(
    settings.issuer,
    {
      id: session.id,
      userId: session.user_id,
      clientId: session.client_id,
      resource: session.resource,
      expiresAt: session.expires_at.getTime()
    },
    scope
  )
  return {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: access.expiresIn,
    scope: scopeText(scope),
    refresh_token: next.token
  } satisfies TokenResponseBody
})
