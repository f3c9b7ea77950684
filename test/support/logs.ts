import { Effect, Logger, LogLevel } from "effect"
import { logEntry, logLine } from "../../src/runtime/logger.js"

/** GATEWAY_TEST_LOGS=1 shows every log line of the gateways tests start (when debugging). */
export const showLogs = process.env["GATEWAY_TEST_LOGS"] === "1"

/**
 * Builds `effect` with only error lines logged, unless GATEWAY_TEST_LOGS=1: services capture their
 * runtime (and its log level) when built, so the requests they serve later log the same way.
 */
export const quietly = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  showLogs ? effect : Logger.withMinimumLogLevel(effect, LogLevel.Error)

/**
 * The log lines of the services built under `capture` (from `info` up), as the JSON objects the
 * production logger writes — for tests of security events. Quiet otherwise.
 */
export class LogCapture {
  readonly entries: Array<Record<string, unknown>> = []

  /** Parsed back from the written text, so a test sees exactly what an operator's log shipper would. */
  readonly logger = Logger.make<unknown, void>((options) => {
    if (!LogLevel.greaterThanEqual(options.logLevel, LogLevel.Info)) return
    this.entries.push(JSON.parse(logLine(logEntry(options))) as Record<string, unknown>)
  })

  capture<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return effect.pipe(
      Logger.withMinimumLogLevel(LogLevel.Info),
      Effect.provide(Logger.replace(Logger.defaultLogger, this.logger))
    )
  }

  events(name: string): Array<Record<string, unknown>> {
    return this.entries.filter((entry) => entry["event"] === name)
  }

  /** Every line as written, for checks that nothing secret appears anywhere. */
  text(): string {
    return this.entries.map((entry) => JSON.stringify(entry)).join("\n")
  }
}
