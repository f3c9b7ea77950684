import { Cause, HashMap, Layer, Logger, LogLevel, Redacted } from "effect"

/**
 * Structured logs: one JSON object per line on stderr, so stdout stays free for command output.
 * Values that are `Redacted` print as "<redacted>" (Effect's own toJSON), and the logger never
 * serialises causes beyond their pretty text so a secret inside an error object is not walked.
 */
const levelName = (level: LogLevel.LogLevel): string => level.label.toLowerCase()

const messageText = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((part) => (typeof part === "string" ? part : safeJson(part))).join(" ")
}

const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value, (_, inner) => (Redacted.isRedacted(inner) ? "<redacted>" : inner)) ?? String(value)
  } catch {
    return String(value)
  }
}

/** One log line as the JSON object written (tests read the same objects). */
export const logEntry = ({
  logLevel,
  message,
  annotations,
  cause,
  date
}: Logger.Logger.Options<unknown>): Record<string, unknown> => {
  const entry: Record<string, unknown> = {
    time: date.toISOString(),
    level: levelName(logLevel),
    msg: messageText(message)
  }
  for (const [key, value] of HashMap.toEntries(annotations)) {
    entry[key] = Redacted.isRedacted(value) ? "<redacted>" : value
  }
  if (!Cause.isEmpty(cause)) entry["cause"] = Cause.pretty(cause)
  return entry
}

/** The text of a log line: the entry as JSON, Redacted values replaced. */
export const logLine = (entry: Record<string, unknown>): string => safeJson(entry)

export const jsonLogger = Logger.make<unknown, void>((options) => {
  process.stderr.write(`${logLine(logEntry(options))}\n`)
})

const levels = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error
} as const

/**
 * Effect's default loggers also copy every log line into the current span as an event. No tracer is
 * exported here, and a span that outlives requests (the generation's, which its runtime inherits)
 * would keep every line it was given: at debug, ~100 bytes per request for the life of the process.
 */
export const loggerLayer = (level: keyof typeof levels = "info") =>
  Layer.mergeAll(
    Logger.replace(Logger.defaultLogger, jsonLogger),
    Logger.remove(Logger.tracerLogger),
    Logger.minimumLogLevel(levels[level])
  )
