import { Clock, Duration, Effect, Schedule } from "effect"
import { metrics } from "../observability/metrics.js"

/**
 * Security-relevant events (refusals, revocations, identity and permission changes) write one
 * structured log line each: `msg` and `event` are the event name operators alert on (the list is in
 * docs/operations.md, "Security events"), the other fields say who, what and why. Never a secret,
 * token, password or code.
 */
export const securityEvent = (event: string, fields: Readonly<Record<string, unknown>>) =>
  Effect.logInfo(event).pipe(
    Effect.annotateLogs({ event, ...fields }),
    // Counted too (gateway_security_events_total, and the sign-ins and approvals they report).
    Effect.zipLeft(Effect.sync(() => metrics.securityEvent(event, fields)))
  )

/**
 * Bounds how many lines one source can write for one event: at most `limit` per `windowMs` per key;
 * the first event after a quiet window reports how many were left out (`suppressed`). A caller
 * looping on a refused request cannot flood the log.
 */
export class EventLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(
    private readonly limit = 10,
    private readonly windowMs = 60_000,
    private readonly maxKeys = 10_000
  ) {}

  /** undefined: leave this one out; otherwise the number of earlier ones left out (0 usually). */
  admit(key: string, now: number): number | undefined {
    const window = this.windows.get(key)
    if (window === undefined || now - window.start >= this.windowMs) {
      const suppressed = window === undefined ? 0 : Math.max(0, window.count - this.limit)
      if (window === undefined && this.windows.size >= this.maxKeys) this.windows.clear()
      this.windows.set(key, { start: now, count: 1 })
      return suppressed
    }
    window.count += 1
    return window.count <= this.limit ? 0 : undefined
  }
}

/** Caller-supplied text in a log line (an Origin, a client id) is cut to this many characters. */
export const MAX_ECHO = 200
export const echo = (text: string): string => (text.length > MAX_ECHO ? `${text.slice(0, MAX_ECHO)}…` : text)

/** How often the rejected-token summary is written. */
export const SUMMARY_INTERVAL = Duration.minutes(1)
/** Addresses tracked per interval; past it they are counted together under "other". */
const MAX_SUMMARY_ADDRESSES = 10_000

interface Tally {
  count: number
  readonly reasons: Map<string, number>
}

/**
 * Security events a client can trigger at will, bounded so a flood cannot flood the log: one event per
 * source is written at most 10 times a minute (`limited`), and refused bearer tokens are summarised per
 * client address (`tokenRejected`): the first refusal from an address in an interval is written at once,
 * the rest are counted and written as one `auth.token_rejected` line with `count` and `reasons` when the
 * interval ends. Process-wide: the counts outlive a reload.
 */
export class SecurityLog extends Effect.Service<SecurityLog>()("gateway/SecurityLog", {
  scoped: Effect.gen(function* () {
    const limiter = new EventLimiter()
    let tallies = new Map<string, Tally>()
    // When the tallies being kept began: a summary says how long it covers (shorter at shutdown).
    let since = yield* Clock.currentTimeMillis

    const limited = (key: string, event: string, fields: Readonly<Record<string, unknown>>) =>
      Effect.suspend(() => {
        const suppressed = limiter.admit(`${event}|${key}`, Date.now())
        if (suppressed === undefined) return Effect.void
        return securityEvent(event, suppressed > 0 ? { ...fields, suppressed } : fields)
      })

    const tokenRejected = (address: string, reason: string, fields: Readonly<Record<string, unknown>> = {}) =>
      Effect.suspend(() => {
        const key = tallies.has(address) || tallies.size < MAX_SUMMARY_ADDRESSES ? address : "other"
        const tally = tallies.get(key)
        if (tally === undefined) {
          tallies.set(key, { count: 0, reasons: new Map() })
          return securityEvent("auth.token_rejected", { ...fields, client_address: key, reason })
        }
        tally.count += 1
        tally.reasons.set(reason, (tally.reasons.get(reason) ?? 0) + 1)
        return Effect.void
      })

    const flush = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const ended = tallies
      const seconds = Math.max(1, Math.round((now - since) / 1000))
      tallies = new Map()
      since = now
      return Effect.forEach(
        [...ended].filter(([, tally]) => tally.count > 0),
        ([address, tally]) =>
          securityEvent("auth.token_rejected", {
            client_address: address,
            count: tally.count,
            reasons: Object.fromEntries(tally.reasons),
            interval_seconds: seconds
          }),
        { discard: true }
      )
    })
    yield* flush.pipe(
      Effect.repeat(Schedule.spaced(SUMMARY_INTERVAL)),
      Effect.delay(SUMMARY_INTERVAL),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => flush)

    return { limited, tokenRejected, flush } as const
  })
}) {}
