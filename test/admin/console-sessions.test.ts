/**
 * Console sessions (docs/console.md, "Sessions"): idle and absolute lifetimes on the TestClock, single
 * use and expiry of a sign-in in progress, cookies that are not the service's format.
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
})
