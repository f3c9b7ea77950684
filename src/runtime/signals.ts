import { Effect, Queue } from "effect"

export type Signal = "SIGHUP" | "SIGINT" | "SIGTERM"
const signals: ReadonlyArray<Signal> = ["SIGHUP", "SIGINT", "SIGTERM"]

/**
 * The process signals as a queue, for as long as the scope lives. Installing handlers replaces
 * Node's default of exiting at once, so shutdown can drain.
 */
export const signalQueue = Effect.acquireRelease(
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Signal>()
    const handlers = signals.map((signal) => {
      const handler = () => Queue.unsafeOffer(queue, signal)
      process.on(signal, handler)
      return [signal, handler] as const
    })
    return { queue, handlers }
  }),
  ({ handlers }) =>
    Effect.sync(() => {
      for (const [signal, handler] of handlers) process.off(signal, handler)
    })
).pipe(Effect.map(({ queue }) => queue))
