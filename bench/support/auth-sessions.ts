import { randomBytes } from "node:crypto"
import { Clock, Effect } from "effect"
import { sha256Hex } from "../../src/crypto/hashing.js"
import { RefreshTokenRepo } from "../../src/store/refresh-tokens.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { UserRepo } from "../../src/store/users.js"

export interface ArrangedSession {
  readonly userId: string
  readonly sessionId: string
  readonly refreshToken: string
}

/**
 * Sessions as a finished sign-in leaves them (user, 8-hour session with offline_access, one refresh
 * token), written through the repositories so the bench measures the endpoints, not the browser pages.
 */
export const arrangeSessions = (count: number, resource: string) =>
  Effect.gen(function* () {
    const now = new Date(yield* Clock.currentTimeMillis)
    const userId = yield* (yield* UserRepo).insertLocal({
      kind: "local",
      username: `bench-${randomBytes(4).toString("hex")}`,
      displayName: "Bench",
      at: now
    })
    const sessions = yield* SessionRepo
    const tokens = yield* RefreshTokenRepo
    return yield* Effect.forEach(Array.from({ length: count }), () =>
      Effect.gen(function* () {
        const sessionId = randomBytes(16).toString("base64url")
        const refreshToken = randomBytes(32).toString("base64url")
        yield* sessions.insert({
          id: sessionId,
          userId,
          clientId: "cli",
          scope: "offline_access",
          resource,
          authTime: now,
          createdAt: now,
          expiresAt: new Date(now.getTime() + 8 * 3600_000)
        })
        yield* tokens.insert(sha256Hex(refreshToken), sessionId, now)
        return { userId, sessionId, refreshToken } satisfies ArrangedSession
      })
    )
  })
