import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Directory snapshots (docs/directory.md): the last applied `version` per identity connection
 * (`provider` = its namespace), which every push must exceed, and what that push changed. A provider
 * with a row here takes its people's memberships from snapshots, no longer from sign-in claims.
 * `users.directory_hash` digests the directory memberships a person was last given.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE directory_versions (
    provider TEXT PRIMARY KEY,
    version BIGINT NOT NULL CHECK (version > 0),
    applied_at ${timestamp} NOT NULL,
    summary TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX users_namespace ON users (namespace) WHERE kind = 'enterprise'`
  // A digest of the directory memberships each person was last given: a snapshot rewrites only the
  // people whose memberships differ, without reading every membership back.
  yield* sql`ALTER TABLE users ADD COLUMN directory_hash TEXT`
})
