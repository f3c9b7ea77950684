/**
 * docs/operations.md, "Security events": refused bearer tokens are summarised per address once a
 * minute, and once more when the gateway stops; each summary says the time it covers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { SecurityLog } from "../../src/events/security-log.js"
import { LogCapture } from "../support/logs.js"

describe("auth.token_rejected summaries", () => {
  it.effect("say the time they cover: the minute, and at shutdown only the part of it that passed", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const reject = (times: number) =>
        Effect.flatMap(SecurityLog, (log) => Effect.repeatN(log.tokenRejected("10.0.0.1", "expired"), times - 1))
      yield* logs.capture(
        Effect.gen(function* () {
          // The first of each minute is logged at once; the rest are counted.
          yield* reject(3)
          yield* TestClock.adjust("60 seconds")
          yield* reject(3)
          yield* TestClock.adjust("16 seconds")
        }).pipe(Effect.provide(SecurityLog.Default))
      )
      const events = logs.events("auth.token_rejected")
      expect(events.filter((event) => event["count"] === undefined)).toHaveLength(2)
      expect(
        events.flatMap((event) => (event["count"] === undefined ? [] : [[event["count"], event["interval_seconds"]]]))
      ).toEqual([
        [2, 60],
        [2, 16]
      ])
    })
  )
})
