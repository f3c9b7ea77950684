import { Clock, Duration, Effect, Layer } from "effect"
import { BrowserSessionRepo } from "../store/browser-sessions.js"
import { StoreHealth } from "../store/health.js"
import { SessionRepo } from "../store/sessions.js"

/** Ended sessions stay a day (for operators reading the tables), then go with their refresh tokens. */
export const ENDED_SESSION_RETENTION = Duration.hours(24)
const INTERVAL = Duration.hours(1)

/**
 * Hourly deletion of sessions and browser sign-ins that ended more than a day ago. Every refresh adds a
 * row, so without this the tables would grow with every session ever held.
 */
export const SessionMaintenance = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sessions = yield* SessionRepo
    const browserSessions = yield* BrowserSessionRepo
    const health = yield* StoreHealth
    const sweep = Effect.gen(function* () {
      const cutoff = new Date((yield* Clock.currentTimeMillis) - Duration.toMillis(ENDED_SESSION_RETENTION))
      yield* sessions.deleteEndedBefore(cutoff)
      yield* browserSessions.deleteEndedBefore(cutoff)
    }).pipe(
      Effect.catchAllCause((cause) => health.failedOr(cause, Effect.logWarning("session maintenance failed", cause))),
      Effect.withSpan("SessionMaintenance.sweep")
    )
    yield* Effect.forkScoped(Effect.repeat(Effect.zipRight(Effect.sleep(INTERVAL), sweep), { while: () => true }))
  })
)
