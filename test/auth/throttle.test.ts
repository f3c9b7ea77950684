/**
 * Failed sign-in throttling per account and per address (docs/authorization-server.md, "Sign-in") — the
 * windows themselves: attempts counted before the check (so parallel requests cannot exceed a limit), per
 * account-and-address, per address and per account, fixed-size keys and eviction that keeps recent
 * counters.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Either, TestClock } from "effect"
import {
  LoginThrottle,
  MAX_ACCOUNT_ADDRESS_FAILURES,
  MAX_ACCOUNT_FAILURES,
  MAX_ADDRESS_FAILURES,
  makeFailureWindow,
  throttleKeys
} from "../../src/auth/throttle.js"

const allowed = (throttle: LoginThrottle, username: string, address: string) =>
  Effect.map(Effect.either(throttle.reserve(username, address)), Either.isRight)

describe("LoginThrottle", () => {
  it.effect("of 200 reservations started together, only the limit get through", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      const results = yield* Effect.forEach(
        Array.from({ length: 200 }, () => "admin"),
        (name) => allowed(throttle, name, "192.0.2.1"),
        { concurrency: "unbounded" }
      )
      expect(results.filter(Boolean)).toHaveLength(MAX_ACCOUNT_ADDRESS_FAILURES)
    }).pipe(Effect.provide(LoginThrottle.Default))
  )

  it.effect("failures from one address do not lock the account at another; a released attempt is no failure", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        expect(yield* allowed(throttle, "admin", "192.0.2.1")).toBe(true)
      }
      expect(yield* allowed(throttle, "Admin", "192.0.2.1")).toBe(false)
      const elsewhere = yield* throttle.reserve("admin", "198.51.100.7")
      yield* throttle.succeeded(elsewhere)
      // Released attempts leave no trace: many right passwords never lock anyone.
      for (let index = 0; index < 3 * MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        yield* throttle.release(yield* throttle.reserve("admin", "198.51.100.7"))
      }
      expect(yield* allowed(throttle, "admin", "198.51.100.7")).toBe(true)
      yield* TestClock.adjust("15 minutes")
      expect(yield* allowed(throttle, "admin", "192.0.2.1")).toBe(true)
    }).pipe(Effect.provide(LoginThrottle.Default))
  )

  it.effect("an address is limited across names; an account across addresses (the backstop)", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      for (let index = 0; index < MAX_ADDRESS_FAILURES; index++) {
        expect(yield* allowed(throttle, `name${index}`, "192.0.2.1")).toBe(true)
      }
      expect(yield* allowed(throttle, "someone-new", "192.0.2.1")).toBe(false)
      expect(yield* allowed(throttle, "someone-new", "192.0.2.2")).toBe(true)

      for (let index = 0; index < MAX_ACCOUNT_FAILURES; index++) {
        expect(yield* allowed(throttle, "target", `10.0.${Math.floor(index / 200)}.${index % 200}`)).toBe(true)
      }
      const refused = yield* Effect.flip(throttle.reserve("target", "203.0.113.9"))
      expect(refused.retryAfterSeconds).toBe(900)
    }).pipe(Effect.provide(LoginThrottle.Default))
  )

  it.effect("the backstop does not lock the owner out at an address they signed in from (30 days)", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      yield* throttle.succeeded(yield* throttle.reserve("owner", "192.0.2.50"))
      for (let index = 0; index < MAX_ACCOUNT_FAILURES; index++) {
        yield* Effect.either(throttle.reserve("owner", `10.1.${Math.floor(index / 200)}.${index % 200}`))
      }
      // Strangers are refused everywhere…
      expect(yield* allowed(throttle, "owner", "203.0.113.9")).toBe(false)
      // …the owner's own address still gets its per-address attempts, and no more.
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        expect(yield* allowed(throttle, "owner", "192.0.2.50")).toBe(true)
      }
      expect(yield* allowed(throttle, "owner", "192.0.2.50")).toBe(false)
      // A right password at the known address takes back only its own attempt: the strangers' failures
      // (counted in the same millisecond here, the clock being frozen) all stay.
      yield* TestClock.adjust("15 minutes")
      yield* throttle.succeeded(yield* throttle.reserve("owner", "192.0.2.50"))
      for (let index = 0; index < MAX_ACCOUNT_FAILURES; index++) {
        yield* Effect.either(throttle.reserve("owner", `10.3.${Math.floor(index / 200)}.${index % 200}`))
      }
      yield* throttle.release(yield* throttle.reserve("owner", "192.0.2.50"))
      expect(yield* allowed(throttle, "owner", "203.0.113.10")).toBe(false)
      // An address is known for 30 days after the last complete sign-in from it.
      yield* TestClock.adjust("31 days")
      for (let index = 0; index < MAX_ACCOUNT_FAILURES; index++) {
        yield* Effect.either(throttle.reserve("owner", `10.2.${Math.floor(index / 200)}.${index % 200}`))
      }
      expect(yield* allowed(throttle, "owner", "192.0.2.50")).toBe(false)
    }).pipe(Effect.provide(LoginThrottle.Default))
  )

  it.effect("a new password forgives the account's earlier failures, never the address's spray window", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) yield* throttle.reserve("admin", "192.0.2.7")
      for (let index = 0; index < MAX_ADDRESS_FAILURES - MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        yield* throttle.reserve(`other${index}`, "192.0.2.7")
      }
      yield* TestClock.adjust("1 minute")
      const resetAt = (yield* Clock.currentTimeMillis) - 1
      // Forgiving failures after the reset is a no-op; the ones before it go from the account's windows…
      expect(yield* throttle.forgiveBefore("admin", "192.0.2.7", 0)).toBe(false)
      expect(yield* throttle.forgiveBefore("admin", "192.0.2.7", resetAt)).toBe(true)
      // …but this address sprayed 20 names: it stays refused for every name until its window passes.
      expect(yield* allowed(throttle, "admin", "192.0.2.7")).toBe(false)
      expect(yield* allowed(throttle, "admin", "192.0.2.8")).toBe(true)
    }).pipe(Effect.provide(LoginThrottle.Default))
  )

  it.effect("counts an IPv6 /64 as one address", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        expect(yield* allowed(throttle, "admin", `2001:db8:1:2::${index + 1}`)).toBe(true)
      }
      expect(yield* allowed(throttle, "admin", "2001:db8:1:2:ffff::9")).toBe(false)
      expect(yield* allowed(throttle, "admin", "2001:db8:1:3::1")).toBe(true)
    }).pipe(Effect.provide(LoginThrottle.Default))
  )

  it("keys have a fixed size whatever the name", () => {
    const long = throttleKeys("x".repeat(256), "192.0.2.1")
    const short = throttleKeys("x", "192.0.2.1")
    expect([long.account.length, long.accountAtAddress.length]).toEqual([64, 64])
    expect([short.account.length, short.accountAtAddress.length]).toEqual([64, 64])
    expect(throttleKeys("ADMIN", "192.0.2.1")).toEqual(throttleKeys("admin", "192.0.2.1"))
  })

  it("every spelling that signs in as one account counts in one window (the account lookup's key)", () => {
    const bob = throttleKeys("bob", "192.0.2.1")
    for (const spelling of [" bob", "bob ", "bob  ", "b\u200bob", "BOB\u00ad", "bob\ufe0f", "Bob\u2060"]) {
      expect(throttleKeys(spelling, "192.0.2.1"), JSON.stringify(spelling)).toEqual(bob)
    }
    expect(throttleKeys("bobb", "192.0.2.1").account).not.toBe(bob.account)
  })
})

describe("failure windows at their key limit", () => {
  it("evict the key written longest ago, keeping the recent counters (never a wholesale clear)", () => {
    const window = makeFailureWindow(1, 100)
    for (let index = 0; index < 99; index++) window.add(`old${index}`, 1_000)
    window.add("admin", 2_000)
    // A flood of new keys pushes out the older keys one by one; the admin's recent window stays.
    for (let index = 0; index < 99; index++) window.add(`flood${index}`, 3_000)
    expect(window.wait("admin", 3_000)).toBeGreaterThan(0)
    expect(window.wait("old0", 3_000)).toBe(0)
    expect(window.wait("flood0", 3_000)).toBeGreaterThan(0)
    // Now the admin's is the stalest key, so it goes next; writing a key again makes it recent.
    window.add("one-more", 3_000)
    expect(window.wait("admin", 3_000)).toBe(0)
    window.add("flood0", 3_000)
    window.add("two-more", 3_000)
    expect(window.wait("flood0", 3_000)).toBeGreaterThan(0)
    expect(window.wait("flood1", 3_000)).toBe(0)
    expect(window.wait("two-more", 3_000)).toBeGreaterThan(0)
  })
})
