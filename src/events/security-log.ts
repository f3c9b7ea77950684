import { Effect } from "effect"

/**
 * Security-relevant events (refusals, revocations, identity and permission changes) write one
 * structured log line each: `msg` and `event` are the event name operators alert on (the list is in
 * docs/operations.md, "Security events"), the other fields say who, what and why. Never a secret,
 * token, password or code.
 */
export const securityEvent = (event: string, fields: Readonly<Record<string, unknown>>) =>
  Effect.logInfo(event).pipe(Effect.annotateLogs({ event, ...fields }))

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
