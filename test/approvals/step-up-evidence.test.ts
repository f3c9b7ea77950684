/**
 * src/approvals/step-up.ts: step-up evidence counts only for what it was given for — one approval or one
 * configuration change, one person, one browser sign-in — and only while fresh.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { StepUps } from "../../src/approvals/step-up.js"

describe("step-up evidence", () => {
  it.effect(
    "evidence for a configuration change is not evidence for a write approval of the same id, nor the reverse",
    () =>
      Effect.gen(function* () {
        const stepUps = yield* StepUps
        yield* stepUps.record(
          { approvalId: "x1", userId: "u1", sessionHash: "s1", for: "config_change" },
          "mfa",
          0,
          60_000
        )
        expect(yield* stepUps.find("s1", "x1", "u1", "config_change")).toEqual({
          approvalId: "x1",
          acr: "mfa",
          authTime: 0
        })
        expect(yield* stepUps.find("s1", "x1", "u1")).toBeUndefined()
        yield* stepUps.record({ approvalId: "x2", userId: "u1", sessionHash: "s1" }, "mfa", 0, 60_000)
        expect(yield* stepUps.find("s1", "x2", "u1", "approval")).toBeDefined()
        expect(yield* stepUps.find("s1", "x2", "u1", "config_change")).toBeUndefined()
        // Another person, another sign-in, or once stale: nothing.
        expect(yield* stepUps.find("s1", "x1", "u2", "config_change")).toBeUndefined()
        expect(yield* stepUps.find("s2", "x1", "u1", "config_change")).toBeUndefined()
        yield* TestClock.adjust("61 seconds")
        expect(yield* stepUps.find("s1", "x1", "u1", "config_change")).toBeUndefined()
      }).pipe(Effect.provide(StepUps.Default))
  )
})
