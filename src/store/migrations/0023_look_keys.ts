import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { lookAlikeKey } from "../../policy/look-alike.js"

const Rows = Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))

/**
 * `groups.look_key` and `users.look_key`: the key under which permission group names, and local
 * accounts' user names, look alike (UTS #39 skeletons, src/policy/look-alike.ts), so a create or rename
 * finds a look-alike by one index lookup. Backfilled for the groups and accounts there are. Not unique:
 * names given before this check may already look alike (they are kept; docs/access-policy.md says how
 * to find them); new names are refused on write.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE groups ADD COLUMN look_key TEXT`
  const rows = yield* sql`SELECT id, name FROM groups WHERE kind = 'permission'`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Rows))
  )
  for (const row of rows) yield* sql`UPDATE groups SET look_key = ${lookAlikeKey(row.name)} WHERE id = ${row.id}`
  yield* sql`CREATE INDEX groups_permission_look_key ON groups (look_key) WHERE kind = 'permission'`
  yield* sql`ALTER TABLE users ADD COLUMN look_key TEXT`
  const accounts =
    yield* sql`SELECT id, username AS name FROM users WHERE kind <> 'enterprise' AND username IS NOT NULL`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Rows))
    )
  for (const row of accounts) yield* sql`UPDATE users SET look_key = ${lookAlikeKey(row.name)} WHERE id = ${row.id}`
  yield* sql`CREATE INDEX users_local_look_key ON users (look_key) WHERE kind <> 'enterprise'`
})
