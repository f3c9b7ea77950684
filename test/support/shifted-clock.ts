import { Clock, type Duration, Effect } from "effect"

/**
 * TEST CLOCK for in-process gateways that also do real I/O: it reads real time plus an offset the
 * test moves forward (`advance`), so an expiry measured on the generation's Effect `Clock` (backend
 * tokens) can pass without the test waiting for it, while sleeps and timeouts still run in real time.
 */
export const shiftedClock = () => {
  let offset = 0
  const live = Clock.make()
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => live.unsafeCurrentTimeMillis() + offset,
    unsafeCurrentTimeNanos: () => live.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => live.unsafeCurrentTimeMillis() + offset),
    currentTimeNanos: Effect.sync(() => live.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n),
    sleep: (duration: Duration.Duration) => live.sleep(duration)
  }
  return {
    clock,
    advance: (ms: number) => {
      offset += ms
    }
  }
}
