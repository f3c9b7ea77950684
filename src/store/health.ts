import { SqlClient } from "@effect/sql"
import { type Cause, Clock, Duration, Effect, Exit, Option, Queue } from "effect"
import { unavailableCause } from "./unavailable.js"

/** While the store answers, the background check runs this often (readiness notices an idle outage). */
export const CHECK_EVERY_READY = Duration.seconds(5)
/** During an outage, this often: how soon after the store answers again readiness says so. */
export const CHECK_EVERY_OUTAGE = Duration.millis(100)
/** A check that takes longer fails: the store is not answering. */
export const CHECK_TIMEOUT = Duration.seconds(2)
/** During an outage, at most one `store.unavailable` line per this interval (docs/operations.md, "Logs"). */
export const OUTAGE_LOG_INTERVAL = Duration.seconds(30)
/**
 * An outage a request's failure reported ends no sooner than this after the last such failure: the
 * check only reads, so a store that reads but cannot write (a full disk) would otherwise end each
 * failed write's outage at the next check, 100 ms later — a pair of lines per write, and readiness back
 * while every write still fails.
 */
export const RECOVERY_QUIET = Duration.seconds(5)

interface Outage {
  readonly since: number
  reason: string
  /** Every failure reported during the outage, requests' and checks'. */
  failures: number
  /** Failures since the last line. */
  notLogged: number
  loggedAt: number
  /** `failures` when the last check ended: the outage ends only at a check with none since. */
  failuresAtCheck: number
  /** When a request (not the check) last reported a failure: the outage lasts `RECOVERY_QUIET` past it. */
  requestFailedAt: number | undefined
}

/**
 * Whether the store answers, from two sources: requests that failed because it did not (reported by the
 * request pipeline, src/http/middleware.ts and src/mcp/edge/post.ts) and one bounded background check —
 * one small query at a time, every `CHECK_EVERY_READY` while the store answers and every
 * `CHECK_EVERY_OUTAGE` during an outage. `/readyz` reads the state (`store_ready`) without querying.
 *
 * An outage writes one `store.unavailable` line when it starts (with its reason), at most one more per
 * `OUTAGE_LOG_INTERVAL` with the failures not logged, and one `store.recovered` line when it ends (with
 * its duration): it ends at the first successful check with no failure reported since the check before
 * and none by a request for `RECOVERY_QUIET`, so a store that still reads but no longer writes (a full
 * disk) stays one outage, and out of readiness, while requests fail.
 * Process-wide, like the store.
 */
export class StoreHealth extends Effect.Service<StoreHealth>()("gateway/StoreHealth", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    let outage: Outage | undefined
    // Wakes the check when an outage starts, so it need not wait out CHECK_EVERY_READY.
    const wake = yield* Queue.sliding<true>(1)

    const line = (message: string, fields: Record<string, unknown>) =>
      (message === "store.recovered" ? Effect.logInfo(message) : Effect.logError(message)).pipe(
        Effect.annotateLogs({ event: message, ...fields })
      )

    /** A failure for lack of the store (a request's, unless `byCheck`): starts an outage, or counts in the current one. */
    const failed = (reason: string, byCheck = false) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const requestFailedAt = byCheck ? undefined : now
        if (outage === undefined) {
          outage = { since: now, reason, failures: 1, notLogged: 0, loggedAt: now, failuresAtCheck: 0, requestFailedAt }
          Queue.unsafeOffer(wake, true)
          return line("store.unavailable", { reason })
        }
        const current = outage
        current.requestFailedAt = requestFailedAt ?? current.requestFailedAt
        current.failures += 1
        current.reason = reason
        if (now - current.loggedAt < Duration.toMillis(OUTAGE_LOG_INTERVAL)) {
          current.notLogged += 1
          return Effect.void
        }
        const notLogged = current.notLogged
        current.notLogged = 0
        current.loggedAt = now
        return line("store.unavailable", {
          reason,
          failures_not_logged: notLogged,
          unavailable_ms: now - current.since
        })
      })

    const answered = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const current = outage
      // A failure reported since the previous check ended keeps the outage open, and so does a recent
      // request's failure: the check reads, and the request may have failed to write.
      if (current === undefined || current.failures > current.failuresAtCheck) return Effect.void
      if (current.requestFailedAt !== undefined && now - current.requestFailedAt < Duration.toMillis(RECOVERY_QUIET))
        return Effect.void
      outage = undefined
      return line("store.recovered", {
        reason: current.reason,
        unavailable_ms: now - current.since,
        failures: current.failures,
        failures_not_logged: current.notLogged
      })
    })

    const check = Effect.gen(function* () {
      const exit = yield* sql`SELECT 1 FROM gateway_meta LIMIT 1`.pipe(
        Effect.timeoutFail({ duration: CHECK_TIMEOUT, onTimeout: () => "timeout" as const }),
        Effect.exit
      )
      if (Exit.isSuccess(exit)) yield* answered
      else yield* failed(unavailableCause(exit.cause) ?? "check failed", true)
      if (outage !== undefined) outage.failuresAtCheck = outage.failures
    })

    // While the store answers, the next check is a real timer's: a test that moves its clock by hours
    // would otherwise run a query for every 5 s it skips. During an outage, the Effect clock's.
    const liveSleep = (duration: Duration.Duration) =>
      Effect.async<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
        return Effect.sync(() => clearTimeout(timer))
      })
    const pause = Effect.suspend(
      (): Effect.Effect<unknown> =>
        outage === undefined
          ? Effect.raceFirst(Queue.take(wake), liveSleep(CHECK_EVERY_READY))
          : Queue.take(wake).pipe(
              Effect.timeoutTo({ duration: CHECK_EVERY_OUTAGE, onTimeout: () => 0, onSuccess: () => 0 })
            )
    )
    yield* pause.pipe(Effect.zipRight(check), Effect.forever, Effect.forkScoped)

    return {
      failed: (reason: string) => failed(reason),
      /**
       * For background work (maintenance ticks): a failure for lack of the store counts in the outage
       * instead of writing its own line with a stack trace; any other failure is `otherwise`'s.
       */
      failedOr: (cause: Cause.Cause<unknown>, otherwise: Effect.Effect<void>) => {
        const reason = unavailableCause(cause)
        return reason === undefined ? otherwise : failed(reason)
      },
      /** Whether the store answers (no outage open): `store_ready` in /readyz. Never queries. */
      ready: (): boolean => outage === undefined,
      /** The reason of the outage open now, if any. */
      reason: (): string | undefined => outage?.reason
    } as const
  })
}) {}

/**
 * For background workers (webhook delivery, the audit archive): a failure for lack of the store counts
 * in the store's outage (one `store.unavailable` line, not one line with a stack trace per retry);
 * any other failure is `otherwise`'s. Without a StoreHealth (a test of the worker alone), `otherwise`.
 */
export const storeFailureOr = (cause: Cause.Cause<unknown>, otherwise: Effect.Effect<void>) =>
  Effect.flatMap(Effect.serviceOption(StoreHealth), (health) =>
    Option.isSome(health) ? health.value.failedOr(cause, otherwise) : otherwise
  )
