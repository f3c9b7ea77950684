import { Clock, Effect, Layer, Option } from "effect"
import { type Caller, SessionGuard, SessionRejected } from "../bearer/caller.js"
import { type CachedSession, SessionCache } from "../store/session-cache.js"
import { SessionRepo } from "../store/sessions.js"
import { UserRepo } from "../store/users.js"

/**
 * The per-request check behind every /mcp call in builtin mode (docs/authorization-server.md, "Access
 * token"): the token's stored session exists, belongs to the token's subject and client, is not revoked and
 * within its 8 hours, and its user is enabled now. Reads go through `SessionCache`, which every revoking or
 * disabling write invalidates, so the common case is two map lookups.
 */
export const makeSessionGuard = Effect.gen(function* () {
  const cache = yield* SessionCache
  const sessions = yield* SessionRepo
  const users = yield* UserRepo

  const loadSession = (id: string) =>
    Effect.map(
      cache.session(
        id,
        Effect.map(sessions.find(id), (row) =>
          Option.match(row, {
            onNone: () => undefined,
            onSome: (session): CachedSession => ({
              userId: session.user_id,
              clientId: session.client_id,
              expiresAt: session.expires_at.getTime(),
              revoked: session.revoked_at !== null
            })
          })
        )
      ),
      Option.fromNullable
    )

  const loadStatus = (userId: string) =>
    cache.userStatus(
      userId,
      Effect.map(users.findById(userId), (row) =>
        Option.match(row, { onNone: () => "deleted", onSome: (user) => user.status })
      )
    )

  const reject = (reason: string) => Effect.fail(new SessionRejected({ reason }))

  const check = (caller: Caller): Effect.Effect<void, SessionRejected> =>
    Effect.gen(function* () {
      if (caller.sessionId === undefined) return yield* reject("the token names no session")
      const found = yield* loadSession(caller.sessionId)
      if (Option.isNone(found)) return yield* reject("unknown session")
      const refused = sessionRefusal(caller, found.value, yield* Clock.currentTimeMillis)
      if (refused !== undefined) return yield* reject(refused)
      const status = yield* loadStatus(found.value.userId)
      if (!isEnabled(status)) return yield* reject("the user is not enabled")
    }).pipe(Effect.withSpan("SessionGuard.check"))

  // The same decision from the cache alone; anything not cached, or any refusal, is left to `check`.
  const checkNow = (caller: Caller, now: number): boolean => {
    if (caller.sessionId === undefined) return false
    const session = cache.cachedSession(caller.sessionId, now)
    if (session === undefined || sessionRefusal(caller, session, now) !== undefined) return false
    const status = cache.cachedUserStatus(session.userId, now)
    return status !== undefined && isEnabled(status)
  }

  return { check, checkNow }
})

const isEnabled = (status: string) => status === "enabled"

/** Why the stored session does not admit the caller at `now` (ms), or undefined when it does. */
const sessionRefusal = (caller: Caller, session: CachedSession, now: number): string | undefined => {
  if (session.revoked) return "the session was revoked"
  if (now >= session.expiresAt) return "the session ended"
  if (session.userId !== caller.subject) return "the session belongs to another user"
  if (caller.clientId !== undefined && caller.clientId !== session.clientId) {
    return "the session belongs to another client"
  }
  return undefined
}

export const SessionGuardLive: Layer.Layer<SessionGuard, never, SessionCache | SessionRepo | UserRepo> = Layer.effect(
  SessionGuard,
  makeSessionGuard
)
