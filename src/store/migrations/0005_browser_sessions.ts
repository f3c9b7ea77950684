import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Sign-ins of a person in a browser at /sso: the cookie holds a random token, the table only its
 * SHA-256. A live one skips the sign-in page for the next authorization and opens the grants portal.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE browser_sessions (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    auth_time ${timestamp} NOT NULL,
    expires_at ${timestamp} NOT NULL,
    revoked_at ${timestamp}
  )`
  yield* sql`CREATE INDEX browser_sessions_user ON browser_sessions (user_id)`
})
