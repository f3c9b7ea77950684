import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * People the gateway knows (docs/authorization-server.md). `id` is the gateway-internal user id that
 * access tokens carry as `sub`. `kind` separates the one built-in administrator (created by
 * `gateway init-admin`), other local accounts and enterprise identities, which never merge.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE users (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('builtin_admin', 'local', 'enterprise')),
    username TEXT,
    display_name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'enabled', 'disabled')),
    created_at ${timestamp} NOT NULL,
    updated_at ${timestamp} NOT NULL,
    CHECK (kind = 'enterprise' OR username IS NOT NULL)
  )`
  // Local sign-in names are unique among local accounts only: enterprise names never collide with them.
  yield* sql`CREATE UNIQUE INDEX users_local_username ON users (username) WHERE kind <> 'enterprise'`
  yield* sql`CREATE UNIQUE INDEX users_one_builtin_admin ON users (kind) WHERE kind = 'builtin_admin'`
})
