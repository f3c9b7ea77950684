import { type Effect, Logger, LogLevel } from "effect"

/** GATEWAY_TEST_LOGS=1 shows every log line of the gateways tests start (when debugging). */
export const showLogs = process.env["GATEWAY_TEST_LOGS"] === "1"

/**
 * Builds `effect` with only error lines logged, unless GATEWAY_TEST_LOGS=1: services capture their
 * runtime (and its log level) when built, so the requests they serve later log the same way.
 */
export const quietly = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  showLogs ? effect : Logger.withMinimumLogLevel(effect, LogLevel.Error)
