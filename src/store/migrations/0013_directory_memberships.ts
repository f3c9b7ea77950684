import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Directory memberships, one row per person (docs/directory.md, "Storage"): the internal ids of the
 * organization groups and departments the last applied snapshot gave them, as a JSON array (sorted as
 * a snapshot writes it; rows moved here keep the database's order, which nothing depends on).
 * A snapshot of 10,000 people with up to 256 memberships each is 10,000 rows here rather than 1.27
 * million rows of `memberships`, and a person whose memberships did not change is not written at all
 * (`users.directory_hash` says who changed). `memberships` keeps what administrators (`direct`) and
 * sign-in claims (`claims`) own; readers see both as one list (src/store/memberships.ts). Groups are
 * never deleted, so an id here always names a group; a person deleted takes their row along.
 * Directory rows an earlier build kept in `memberships` move here.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE directory_memberships (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    group_ids TEXT NOT NULL,
    updated_at ${timestamp} NOT NULL
  )`
  // PostgreSQL: lists of UUIDs barely compress, and trying costs more than writing them (10,000 lists
  // of 256: 1.1 s compressed or refused, 0.35 s stored as they are; docs/benchmarks.md).
  yield* sql.onDialectOrElse({
    pg: () => sql`ALTER TABLE directory_memberships ALTER COLUMN group_ids SET STORAGE EXTERNAL`,
    orElse: () => Effect.void
  })
  yield* sql.onDialectOrElse({
    pg: () => sql`INSERT INTO directory_memberships (user_id, group_ids, updated_at)
      SELECT user_id, jsonb_agg(group_id ORDER BY group_id)::text, MAX(created_at)
      FROM memberships WHERE source = 'directory' GROUP BY user_id`,
    orElse: () => sql`INSERT INTO directory_memberships (user_id, group_ids, updated_at)
      SELECT user_id, json_group_array(group_id), MAX(created_at)
      FROM (SELECT * FROM memberships WHERE source = 'directory' ORDER BY user_id, group_id) GROUP BY user_id`
  })
  yield* sql`DELETE FROM memberships WHERE source = 'directory'`
})
