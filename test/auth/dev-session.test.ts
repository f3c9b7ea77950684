/**
 * The development session guard (`gateway serve --dev`, docs/mcp.md): `gateway dev-token` sessions are
 * admitted without a stored session, every other token goes to the guard it wraps — by `check` and by
 * its cached form `checkNow` alike, which must never admit what `check` refuses.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { DevSessionGuard, devSessionPrefix } from "../../src/auth/dev-session.js"
import { type Caller, SessionGuard, SessionRejected } from "../../src/bearer/caller.js"

const caller = (sessionId: string | undefined): Caller => ({
  issuer: "http://127.0.0.1/sso",
  subject: "user-1",
  scopes: new Set(),
  clientId: "cli",
  sessionId,
  tokenId: "j1",
  expiresAt: 2_000_000_000
})

const outcome = (effect: Effect.Effect<void, SessionRejected>) =>
  Effect.match(effect, { onFailure: (error) => error.reason, onSuccess: () => "admitted" })

/** A stored-session guard that admits only session "live". */
const inner = Layer.succeed(SessionGuard, {
  check: (who: Caller) =>
    who.sessionId === "live" ? Effect.void : Effect.fail(new SessionRejected({ reason: "unknown session" })),
  checkNow: (who: Caller) => who.sessionId === "live"
})

describe("DevSessionGuard", () => {
  it.effect("admits dev sessions, and hands every other token to the guard it wraps (check and checkNow)", () =>
    Effect.gen(function* () {
      const guard = yield* SessionGuard
      const dev = caller(`${devSessionPrefix}abc`)
      expect(yield* outcome(guard.check(dev))).toBe("admitted")
      expect(guard.checkNow(dev, 0)).toBe(true)
      expect(yield* outcome(guard.check(caller("live")))).toBe("admitted")
      expect(guard.checkNow(caller("live"), 0)).toBe(true)
      expect(yield* outcome(guard.check(caller("other")))).toBe("unknown session")
      expect(guard.checkNow(caller("other"), 0)).toBe(false)
      expect(guard.checkNow(caller(undefined), 0)).toBe(false)
    }).pipe(Effect.provide(DevSessionGuard.pipe(Layer.provide(inner))))
  )

  it.effect("without a session store, only dev sessions are admitted", () =>
    Effect.gen(function* () {
      const guard = yield* SessionGuard
      expect(guard.checkNow(caller(`${devSessionPrefix}abc`), 0)).toBe(true)
      expect(yield* outcome(guard.check(caller("live")))).toBe("no session store")
      expect(guard.checkNow(caller("live"), 0)).toBe(false)
    }).pipe(Effect.provide(DevSessionGuard))
  )
})
