import { Cause, Effect, Option } from "effect"
import { StoreError } from "./store.js"

const messageOf = (error: unknown): string => {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(messageOf).join("; ")
  }
  if (error instanceof Error) {
    const inner = "cause" in error && error.cause !== undefined ? messageOf(error.cause) : ""
    // SqlError's own text ("PgClient: Failed to connect") only restates the context; the driver's is the news.
    if (inner !== "" && "_tag" in error && error._tag === "SqlError") return inner
    const own = error.message.trim()
    if (own === "") return inner || error.name
    return inner !== "" && inner !== own ? `${own}: ${inner}` : own
  }
  return String(error)
}

/**
 * One line saying why a database operation failed, for a `StoreError`. `secrets` (e.g. the PostgreSQL
 * password) are masked in case a driver ever echoes its connection string.
 */
export const failureReason = (cause: Cause.Cause<unknown>, secrets: ReadonlyArray<string> = []): string => {
  const text = Cause.isInterruptedOnly(cause) ? "interrupted" : messageOf(Cause.squash(cause))
  return secrets
    .filter((secret) => secret.length > 0)
    .reduce((masked, secret) => masked.split(secret).join("***"), text)
}

/**
 * Turns any failure or defect of a startup step into a `StoreError` that starts with `context`, keeping
 * `StoreError`s (already worded) and interruption as they are.
 */
export const toStoreError =
  (context: string, secrets: ReadonlyArray<string> = []) =>
  (cause: Cause.Cause<unknown>): Effect.Effect<never, StoreError> => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure) && failure.value instanceof StoreError) return Effect.fail(failure.value)
    if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
    return Effect.fail(new StoreError({ message: `${context}: ${failureReason(cause, secrets)}` }))
  }
