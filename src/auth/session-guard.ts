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
      const session = found.value
      if (session.revoked) return yield* reject("the session was revoked")
      if ((yield* Clock.currentTimeMillis) >= session.expiresAt) return yield* reject("the session ended")
      if (session.userId !== caller.subject) return yield* reject("the session belongs to another user")
      if (caller.clientId !== undefined && caller.clientId !== session.clientId) {
        return yield* reject("the session belongs to another client")
      }
      const status = yield* loadStatus(session.userId)
      if (status !== "enabled") return yield* reject("the user is not enabled")
    }).pipe(Effect.withSpan("SessionGuard.check"))

  return { check }
})

export const SessionGuardLive: Layer.Layer<SessionGuard, never, SessionCache | SessionRepo | UserRepo> = Layer.effect(
  SessionGuard,
  makeSessionGuard
)
