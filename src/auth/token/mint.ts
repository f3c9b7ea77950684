import { randomBytes } from "node:crypto"
import { HttpServerResponse } from "@effect/platform"
import { Clock, Effect } from "effect"
import { sha256Hex } from "../../crypto/hashing.js"
import { Signer } from "../../crypto/signer.js"
import { scopeText } from "../scopes.js"

/** Spec Limits: access JWTs live 10 minutes at most; the local session 8 hours at most. */
export const ACCESS_TOKEN_TTL_SECONDS = 600
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000

/** The token-session facts an access token is minted from. */
export interface TokenSession {
  readonly id: string
  readonly userId: string
  readonly clientId: string
  readonly resource: string
  readonly expiresAt: number
}

/**
 * Signs an access token for `session` (claims: docs/authorization-server.md). It never outlives the
 * session, so the 8-hour end is exact even for the last token.
 */
export const mintAccessToken = Effect.fn("mintAccessToken")(function* (
  issuer: string,
  session: TokenSession,
  scope: ReadonlyArray<string>
) {
  const signer = yield* Signer
  const now = yield* Clock.currentTimeMillis
  const left = Math.floor((session.expiresAt - now) / 1000)
  const expiresIn = Math.min(ACCESS_TOKEN_TTL_SECONDS, left)
  const token = yield* signer.sign(
    { scope: scopeText(scope), client_id: session.clientId, sid: session.id },
    { issuer, audience: session.resource, subject: session.userId, expiresInSeconds: Math.max(1, expiresIn) }
  )
  return { token, expiresIn: Math.max(1, expiresIn) }
})

/** A new refresh token: 32 random bytes, and the SHA-256 that is all the store keeps of it. */
export const newRefreshToken = () => {
  const token = randomBytes(32).toString("base64url")
  return { token, hash: sha256Hex(token) }
}

export interface TokenResponseBody {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly expires_in: number
  readonly scope: string
  readonly refresh_token?: string
}

/** RFC 6749 §5.1: JSON, never cached. */
export const tokenResponse = (body: TokenResponseBody) =>
  HttpServerResponse.unsafeJson(body, { headers: { "cache-control": "no-store", pragma: "no-cache" } })
