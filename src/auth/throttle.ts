import { Clock, Data, Effect } from "effect"

/**
 * Failed-login throttling (docs/authorization-server.md, "Throttling"): at most 5 failures per
 * account and 20 per client address within 15 minutes; past that, sign-in attempts for that account
 * or from that address are refused until the oldest failure in the window is 15 minutes old. Wrong
 * passwords and wrong TOTP codes both count. A successful sign-in clears the account's failures.
 * In memory: a single instance (spec), and a restart is not something an attacker can trigger.
 */
export const WINDOW_MS = 15 * 60 * 1000
export const MAX_ACCOUNT_FAILURES = 5
export const MAX_ADDRESS_FAILURES = 20
const MAX_KEYS = 100_000

export class LoginThrottled extends Data.TaggedError("LoginThrottled")<{ readonly retryAfterSeconds: number }> {}

const makeCounter = (limit: number) => {
  const failures = new Map<string, Array<number>>()
  const recent = (key: string, now: number) => {
    const list = (failures.get(key) ?? []).filter((at) => at > now - WINDOW_MS)
    if (list.length === 0) failures.delete(key)
    else failures.set(key, list)
    return list
  }
  return {
    /** Seconds until the next attempt is allowed, or 0. */
    wait: (key: string, now: number) => {
      const list = recent(key, now)
      const oldest = list[list.length - limit]
      return list.length >= limit && oldest !== undefined ? Math.ceil((oldest + WINDOW_MS - now) / 1000) : 0
    },
    record: (key: string, now: number) => {
      if (failures.size >= MAX_KEYS && !failures.has(key)) failures.clear()
      failures.set(key, [...recent(key, now), now].slice(-limit))
    },
    clear: (key: string) => failures.delete(key)
  }
}

export class LoginThrottle extends Effect.Service<LoginThrottle>()("gateway/LoginThrottle", {
  sync: () => {
    const accounts = makeCounter(MAX_ACCOUNT_FAILURES)
    const addresses = makeCounter(MAX_ADDRESS_FAILURES)
    const accountKey = (username: string) => username.normalize("NFC").toLowerCase()

    const check = Effect.fn("LoginThrottle.check")(function* (username: string, address: string) {
      const now = yield* Clock.currentTimeMillis
      const wait = Math.max(accounts.wait(accountKey(username), now), addresses.wait(address, now))
      if (wait > 0) return yield* new LoginThrottled({ retryAfterSeconds: wait })
    })

    const recordFailure = Effect.fn("LoginThrottle.recordFailure")(function* (username: string, address: string) {
      const now = yield* Clock.currentTimeMillis
      accounts.record(accountKey(username), now)
      addresses.record(address, now)
    })

    const recordSuccess = (username: string) => Effect.sync(() => accounts.clear(accountKey(username)))

    return { check, recordFailure, recordSuccess } as const
  }
}) {}
