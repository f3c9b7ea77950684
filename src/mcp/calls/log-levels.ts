import type { LoggingLevel } from "@modelcontextprotocol/server"

export type { LoggingLevel }

/** RFC 5424 severities as MCP names them, least severe first. */
export const loggingLevels: ReadonlyArray<LoggingLevel> = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency"
]

export const isLoggingLevel = (value: unknown): value is LoggingLevel =>
  typeof value === "string" && (loggingLevels as ReadonlyArray<string>).includes(value)

/**
 * `deliver` for log messages at or above `threshold` (all of them without one); a message whose level is
 * not an MCP level is dropped — the backend's text never reaches a client unchecked in shape.
 */
export const atLeast =
  (threshold: LoggingLevel | undefined, deliver: (message: Record<string, unknown>) => void) =>
  (message: Record<string, unknown>): void => {
    const level = message["level"]
    if (!isLoggingLevel(level)) return
    if (threshold !== undefined && loggingLevels.indexOf(level) < loggingLevels.indexOf(threshold)) return
    deliver(message)
  }
