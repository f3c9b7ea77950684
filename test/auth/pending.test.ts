/**
 * docs/authorization-server.md, "Lifetimes and limits" (login transactions in memory, bounded) — under a
 * flood of anonymous starts, a sign-in that already passed its password step is never dropped, and each
 * address has its own cap.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { MAX_TRANSACTIONS, MAX_TRANSACTIONS_PER_ADDRESS, PendingAuthorizations } from "../../src/auth/pending.js"

describe("PendingAuthorizations", () => {
  it.effect("a full table drops the oldest anonymous sign-ins, never one past its password", () =>
    Effect.gen(function* () {
      const pending = yield* PendingAuthorizations
      const anonymous = yield* pending.start("binding", undefined, "192.0.2.1")
      const proved = yield* pending.start("binding", undefined, "192.0.2.1")
      yield* pending.update({ ...proved, stage: "mfa", userId: "u", username: "admin" })
      // Floods from many addresses (each within its own cap) fill the table and then some.
      let started = 0
      for (let address = 0; started < MAX_TRANSACTIONS + 100; address++) {
        for (let index = 0; index < MAX_TRANSACTIONS_PER_ADDRESS; index++, started++) {
          yield* pending.start("binding", undefined, `10.${address >> 8}.${address & 255}.1`)
        }
      }
      expect(Option.isSome(yield* pending.find(proved.id))).toBe(true)
      expect(Option.isNone(yield* pending.find(anonymous.id))).toBe(true)
    }).pipe(Effect.provide(PendingAuthorizations.Default))
  )

  it.effect("each address has its own cap; finishing one frees a slot", () =>
    Effect.gen(function* () {
      const pending = yield* PendingAuthorizations
      const first = yield* pending.start("binding", undefined, "192.0.2.1")
      for (let index = 1; index < MAX_TRANSACTIONS_PER_ADDRESS; index++) {
        yield* pending.start("binding", undefined, "192.0.2.1")
      }
      const refused = yield* Effect.flip(pending.start("binding", undefined, "192.0.2.1"))
      expect(refused._tag).toBe("TooManySignIns")
      expect(refused.retryAfterSeconds).toBe(300)
      yield* pending.start("binding", undefined, "192.0.2.2")
      yield* pending.finish(first.id)
      yield* pending.start("binding", undefined, "192.0.2.1")
    }).pipe(Effect.provide(PendingAuthorizations.Default))
  )
})
