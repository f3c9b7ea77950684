import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Refresh tokens, stored only as SHA-256 hashes (docs/secrets.md). A token is
 * used once: rotation sets `consumed_at` with a conditional UPDATE, so of two concurrent uses at most
 * one wins; presenting a consumed token again revokes its session.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at ${timestamp} NOT NULL,
    consumed_at ${timestamp}
  )`
  yield* sql`CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id)`
})
