import { randomBytes } from "node:crypto"
import { HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { sha256Hex } from "../crypto/hashing.js"
import { BrowserSessionRepo } from "../store/browser-sessions.js"
import { UserRepo, type UserRow } from "../store/users.js"
import { accountUsable } from "./account-access.js"
import { newCookieToken, readSessionCookie } from "./cookies.js"
import type { AuthSettings } from "./settings.js"
import { SESSION_TTL_MS } from "./token/mint.js"

/** A person signed in in this browser: their sign-in is at most 8 hours old and they are enabled now. */
export interface SignedIn {
  readonly user: UserRow
  readonly authTime: number
  /** The cookie's token; the portal's anti-CSRF token is derived from it. */
  readonly token: string
}

export const currentSignIn = (settings: AuthSettings) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const token = readSessionCookie(settings, request.cookies)
    if (token === undefined) return Option.none<SignedIn>()
    const row = yield* (yield* BrowserSessionRepo).findByTokenHash(sha256Hex(token))
    const now = yield* Clock.currentTimeMillis
    if (Option.isNone(row) || row.value.revoked_at !== null || row.value.expires_at.getTime() <= now) {
      return Option.none<SignedIn>()
    }
    const user = yield* (yield* UserRepo).findById(row.value.user_id)
    if (Option.isNone(user) || !accountUsable(user.value)) return Option.none<SignedIn>()
    return Option.some<SignedIn>({ user: user.value, authTime: row.value.auth_time.getTime(), token })
  })

/** Records a sign-in that just happened; the cookie token and how long the cookie should live. */
export const startSignIn = Effect.fn("startSignIn")(function* (userId: string, authTime: number) {
  const token = newCookieToken()
  const expiresAt = authTime + SESSION_TTL_MS
  yield* (yield* BrowserSessionRepo).insert({
    id: randomBytes(16).toString("base64url"),
    tokenHash: sha256Hex(token),
    userId,
    authTime: new Date(authTime),
    expiresAt: new Date(expiresAt)
  })
  return { token, maxAgeSeconds: Math.floor(SESSION_TTL_MS / 1000) }
})

/** The portal's anti-CSRF token: only a page that could read the HttpOnly session cookie's value knows it. */
export const portalCsrfToken = (signedIn: SignedIn): string => sha256Hex(`portal-csrf:${signedIn.token}`)
