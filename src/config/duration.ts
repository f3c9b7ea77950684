import { Duration, ParseResult, Schema } from "effect"

const unitMillis = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const pattern = /^(\d+(?:ms|s|m|h|d))+$/
const part = /(\d+)(ms|s|m|h|d)/g

/** Why a text is not a duration, or undefined when it is one. */
const durationError = (text: string): string | undefined => {
  if (!pattern.test(text)) return "expected a duration such as 500ms, 30s, 5m or 24h"
  // Huge amounts must become a problem, not Infinity or a silently rounded number.
  return Number.isSafeInteger(sumMillis(text)) ? undefined : "duration is too large"
}

const sumMillis = (text: string): number => {
  let millis = 0
  for (const [, amount, unit] of text.matchAll(part)) {
    millis += Number(amount) * unitMillis[unit as keyof typeof unitMillis]
  }
  return millis
}

/** Parses `500ms`, `30s`, `5m`, `24h`, `1h30m`; returns undefined for anything else. */
export const parseDuration = (text: string): Duration.Duration | undefined =>
  durationError(text) === undefined ? Duration.millis(sumMillis(text)) : undefined

export const formatDuration = (duration: Duration.Duration): string => {
  const millis = Duration.toMillis(duration)
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (millis !== 0 && millis % unitMillis[unit] === 0) return `${millis / unitMillis[unit]}${unit}`
  }
  return `${millis}ms`
}

/** A duration written as text in YAML (`30s`, `24h`), decoded to an Effect Duration. */
export const DurationFromString = Schema.transformOrFail(Schema.String, Schema.DurationFromSelf, {
  strict: true,
  decode: (text, _, ast) => {
    const error = durationError(text)
    return error === undefined
      ? ParseResult.succeed(Duration.millis(sumMillis(text)))
      : ParseResult.fail(new ParseResult.Type(ast, text, error))
  },
  encode: (duration) => ParseResult.succeed(formatDuration(duration))
}).annotations({ identifier: "Duration" })
