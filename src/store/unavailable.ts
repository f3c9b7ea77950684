import { Cause } from "effect"

/**
 * Whether a failure means the store could not be reached or used at all — the database is down,
 * restarting, refusing connections, or its file cannot be opened or written — as opposed to a bug or a
 * refused statement. Requests that fail this way are answered `503 store_unavailable` and logged as one
 * outage (src/store/health.ts), not as one `internal_error` each. Decided here, once, for every route.
 *
 * The reason is a fixed word and a code (a socket error, a PostgreSQL SQLSTATE, a SQLite result code),
 * never a driver's message: those can name hosts, users or, in a connection string, a password.
 */

// Socket and name-resolution errors on the way to PostgreSQL.
const socketCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN"
])

// PostgreSQL SQLSTATEs: class 08 (connection exception) is matched by prefix; 57P01–57P03 are the
// server shutting down or starting (admin_shutdown, crash_shutdown, cannot_connect_now), 53300
// too_many_connections, 57P05 idle_session_timeout.
const postgresStates = new Set(["57P01", "57P02", "57P03", "57P05", "53300"])

// SQLite result codes (extended codes share the primary's prefix, e.g. SQLITE_IOERR_WRITE): the file
// cannot be opened, read or written, stays locked past busy_timeout, became read-only, or the disk is full.
const sqlitePrefixes = ["SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_BUSY", "SQLITE_READONLY", "SQLITE_FULL"]

// node-postgres errors that carry no code: a connection closed under a query, or none obtained in time.
const postgresMessages: ReadonlyArray<readonly [RegExp, string]> = [
  [/^Connection terminated/, "connection terminated"],
  [/^timeout exceeded when trying to connect/, "connect timeout"],
  [/^Client has encountered a connection error/, "connection error"],
  [/^Connection timed out/, "connect timeout"]
]

const codeOf = (error: object): string | undefined => {
  const code = (error as { code?: unknown }).code
  return typeof code === "string" ? code : undefined
}

const reasonOfOne = (error: object): string | undefined => {
  const code = codeOf(error)
  if (code !== undefined) {
    if (socketCodes.has(code)) return `connection ${code}`
    if (/^08[0-9A-Z]{3}$/.test(code) || postgresStates.has(code)) return `postgres ${code}`
    if (sqlitePrefixes.some((prefix) => code === prefix || code.startsWith(`${prefix}_`))) return `sqlite ${code}`
  }
  const message = (error as { message?: unknown }).message
  if (typeof message === "string") {
    for (const [pattern, reason] of postgresMessages) if (pattern.test(message)) return `postgres ${reason}`
  }
  return undefined
}

const isSqlError = (error: object) => (error as { _tag?: unknown })._tag === "SqlError"

/**
 * The reason `error` (a thrown value or a defect) says the store is unavailable, else undefined. Only a
 * failure of the store counts: a `SqlError` (what every repository fails with) whose own code, or one in
 * its chain of causes, names a lost or refused connection. The same socket error from anything else — a
 * backend, an identity provider — is not the store's, and answering it as `store_unavailable` would hide
 * it and take the gateway out of readiness.
 */
export const unavailableReason = (error: unknown): string | undefined => search(error, 0, false)

const search = (error: unknown, depth: number, inStore: boolean): string | undefined => {
  if (typeof error !== "object" || error === null || depth > 8) return undefined
  const store = inStore || isSqlError(error)
  if (store) {
    const own = reasonOfOne(error)
    if (own !== undefined) return own
  }
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const found = search(inner, depth + 1, store)
      if (found !== undefined) return found
    }
  }
  const found = search((error as { cause?: unknown }).cause, depth + 1, store)
  if (found !== undefined) return found
  // The PostgreSQL client found no connection to run on: whatever the pool's own error, the store is
  // out of reach (e.g. a connection refused, or the pool's connect timeout).
  const message = (error as { message?: unknown }).message
  if (
    isSqlError(error) &&
    typeof message === "string" &&
    /^(Failed to acquire connection|Connection error)/.test(message)
  ) {
    return "postgres no connection"
  }
  return undefined
}

/** The reason a failed request's cause says the store is unavailable (any of its defects or failures). */
export const unavailableCause = (cause: Cause.Cause<unknown>): string | undefined => {
  for (const defect of Cause.defects(cause)) {
    const found = unavailableReason(defect)
    if (found !== undefined) return found
  }
  for (const failure of Cause.failures(cause)) {
    const found = unavailableReason(failure)
    if (found !== undefined) return found
  }
  return undefined
}
