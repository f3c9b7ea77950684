/**
 * Console sessions (docs/console.md, "Sessions"): idle and absolute lifetimes on the TestClock, single
 * use and expiry of a sign-in in progress, cookies that are not the service's format, and sign-ins held
 * in their sealed cookies, so that a flood of anonymous ones pushes out nobody's.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, TestClock } from "effect"
import { CONSOLE_IDLE_MS, ConsoleSessions, SIGN_IN_TTL_MS } from "../../src/admin/console/sessions.js"

const tokens = { userId: "u1", accessToken: "a", accessExpiresAt: 0, refreshToken: undefined }

describe("ConsoleSessions", () => {
  it.effect("a session ends after 30 idle minutes, and 8 hours after sign-in however busy", () =>
    Effect.gen(function* () {
      const sessions = yield* ConsoleSessions
      const cookie = yield* sessions.create(tokens)
      expect(cookie).toMatch(/^[A-Za-z0-9_-]{43}$/)
      yield* TestClock.adjust(Duration.millis(CONSOLE_IDLE_MS - 1))
      const found = yield* sessions.find(cookie)
      expect(found?.userId).toBe("u1")
      expect(found?.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* sessions.find(cookie)).toBeUndefined()

      // Busy: every request moves lastSeen (the console's pipeline does), until the absolute end.
      const busy = yield* sessions.create(tokens)
      for (let hour = 0; hour < 16; hour++) {
        const session = yield* sessions.find(busy)
        expect(session).toBeDefined()
        session!.lastSeen = yield* Clock.currentTimeMillis
        yield* TestClock.adjust(Duration.minutes(29))
      }
      yield* TestClock.adjust(Duration.minutes(16))
      expect(yield* sessions.find(busy)).toBeUndefined()
      // Ending one is immediate; malformed cookies are no session.
      const other = yield* sessions.create(tokens)
      yield* sessions.end(other)
      expect(yield* sessions.find(other)).toBeUndefined()
      expect(yield* sessions.find("x")).toBeUndefined()
      expect(yield* sessions.find(undefined)).toBeUndefined()
    }).pipe(Effect.provide(ConsoleSessions.Default))
  )

  it.effect("a sign-in in progress is taken once, within 10 minutes", () =>
    Effect.gen(function* () {
      const sessions = yield* ConsoleSessions
      const started = yield* sessions.startSignIn("/console/identities")
      expect(started.pending.verifier).not.toBe(started.pending.state)
      expect(yield* sessions.takeSignIn(started.cookie)).toMatchObject({ returnTo: "/console/identities" })
      expect(yield* sessions.takeSignIn(started.cookie)).toBeUndefined()
      const late = yield* sessions.startSignIn("/console")
      yield* TestClock.adjust(Duration.millis(SIGN_IN_TTL_MS))
      expect(yield* sessions.takeSignIn(late.cookie)).toBeUndefined()
      expect(yield* sessions.takeSignIn("not-a-cookie")).toBeUndefined()
    }).pipe(Effect.provide(ConsoleSessions.Default))
  )

  it.effect(
    "a sign-in lives in its sealed cookie: 20,000 anonymous starts push out no one's, and an altered or foreign cookie opens nothing",
    () =>
      Effect.gen(function* () {
        const sessions = yield* ConsoleSessions
        const mine = yield* sessions.startSignIn("/console/groups")
        // Before, the 10,001st anonymous GET /console pushed out the oldest sign-in in progress.
        for (let n = 0; n < 20_000; n++) yield* sessions.startSignIn("/console")
        const taken = yield* sessions.takeSignIn(mine.cookie)
        expect(taken).toEqual(mine.pending)
        // The cookie says nothing readable: not the state, the verifier or the return path.
        for (const part of [mine.pending.state, mine.pending.verifier, "groups"])
          expect(mine.cookie).not.toContain(part)

        const other = yield* sessions.startSignIn("/console/audit")
        const [version, nonce, body] = other.cookie.split(".") as [string, string, string]
        const flipped = `${body.slice(0, 10)}${body[10] === "A" ? "B" : "A"}${body.slice(11)}`
        expect(yield* sessions.takeSignIn(`${version}.${nonce}.${flipped}`)).toBeUndefined()
        expect(yield* sessions.takeSignIn(`${other.cookie}x`)).toBeUndefined()
        expect(yield* sessions.takeSignIn("x".repeat(5000))).toBeUndefined()
        expect(yield* sessions.takeSignIn("v1.a b.c")).toBeUndefined()
        // The alterations took nothing: the real cookie still works, once.
        expect(yield* sessions.takeSignIn(other.cookie)).toMatchObject({ returnTo: "/console/audit" })
        expect(yield* sessions.takeSignIn(other.cookie)).toBeUndefined()

        // A return path that escapes long (each backslash doubles in JSON) would make a cookie browsers
        // drop: that sign-in returns to the overview instead.
        const escaped = yield* sessions.startSignIn(`/console/identities?q=${"\\".repeat(1_500)}`)
        expect(escaped.cookie.length).toBeLessThanOrEqual(3800)
        expect(escaped.pending.returnTo).toBe("/console")
        expect(yield* sessions.takeSignIn(escaped.cookie)).toMatchObject({ returnTo: "/console" })

        // Another process's key (a restart): the cookie no longer opens.
        const restarted = yield* Effect.provide(ConsoleSessions, ConsoleSessions.Default)
        const before = yield* sessions.startSignIn("/console")
        expect(yield* restarted.takeSignIn(before.cookie)).toBeUndefined()
      }).pipe(Effect.provide(ConsoleSessions.Default))
  )

  it.effect("a taken sign-in is remembered for its 10 minutes, then forgotten (its cookie has expired by then)", () =>
    Effect.gen(function* () {
      const sessions = yield* ConsoleSessions
      const first = yield* sessions.startSignIn("/console")
      expect(yield* sessions.takeSignIn(first.cookie)).toBeDefined()
      yield* TestClock.adjust(Duration.millis(SIGN_IN_TTL_MS - 1))
      expect(yield* sessions.takeSignIn(first.cookie)).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(1))
      // A new take prunes what is older than 10 minutes; the old cookie is refused as expired anyway.
      const second = yield* sessions.startSignIn("/console")
      expect(yield* sessions.takeSignIn(second.cookie)).toBeDefined()
      expect(yield* sessions.takeSignIn(first.cookie)).toBeUndefined()
      expect(yield* sessions.takeSignIn(second.cookie)).toBeUndefined()
      // Pruning drops only what is older than 10 minutes: two taken a minute apart both stay taken.
      const third = yield* sessions.startSignIn("/console")
      expect(yield* sessions.takeSignIn(third.cookie)).toBeDefined()
      yield* TestClock.adjust(Duration.minutes(1))
      const fourth = yield* sessions.startSignIn("/console")
      expect(yield* sessions.takeSignIn(fourth.cookie)).toBeDefined()
      expect(yield* sessions.takeSignIn(third.cookie)).toBeUndefined()
      expect(yield* sessions.takeSignIn(fourth.cookie)).toBeUndefined()
    }).pipe(Effect.provide(ConsoleSessions.Default))
  )
})
