import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Token sessions: one per authorization code exchanged, named by the access token's `sid`. Every
 * refresh token of a session belongs to its family; `expires_at` is the sign-in time plus 8 hours
 * (docs/authorization-server.md, "Lifetimes and limits"), after which neither refresh nor /mcp accepts it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    resource TEXT NOT NULL,
    auth_time ${timestamp} NOT NULL,
    created_at ${timestamp} NOT NULL,
    expires_at ${timestamp} NOT NULL,
    revoked_at ${timestamp},
    revoked_reason TEXT,
    CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL))
  )`
  yield* sql`CREATE INDEX sessions_user_client ON sessions (user_id, client_id)`
})
