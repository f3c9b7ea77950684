import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { lookAlikeKey } from "../../policy/look-alike.js"

const Rows = Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))

/**
 * `groups.look_key`: the key under which permission group names look alike (UTS #39 skeletons,
 * src/policy/look-alike.ts), so a create or rename finds a look-alike by one index lookup. Backfilled
 * for the permission groups there are. Not unique: groups named before this check may already look
 * alike (they are kept, and listed in the docs' way to find them); new names are refused on write.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE groups ADD COLUMN look_key TEXT`
  const rows = yield* sql`SELECT id, name FROM groups WHERE kind = 'permission'`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Rows))
  )
  for (const row of rows) yield* sql`UPDATE groups SET look_key = ${lookAlikeKey(row.name)} WHERE id = ${row.id}`
  yield* sql`CREATE INDEX groups_permission_look_key ON groups (look_key) WHERE kind = 'permission'`
})
