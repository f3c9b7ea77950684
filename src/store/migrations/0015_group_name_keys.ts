import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { securityEvent } from "../../events/security-log.js"
import { groupNameKey } from "../../policy/group-name.js"

const Rows = Schema.Array(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    created_at: Schema.Union(Schema.String, Schema.DateFromSelf),
    revision: Schema.Union(Schema.Number, Schema.NumberFromString)
  })
)

const sortable = (at: string | Date) => (typeof at === "string" ? new Date(at) : at).getTime()

/**
 * Permission group names are compared by a key that reads alike what looks alike (NFC, case-folded,
 * trimmed, invisible characters dropped: src/policy/group-name.ts), kept in `groups.name_key` under a
 * unique index among permission groups, so a name check is one index lookup and two racing creates
 * cannot both win.
 *
 * The key is backfilled for existing permission groups. Where existing names already read alike, the
 * oldest group (`created_at`, then `id`) keeps its name; every later one is renamed to
 * `<name> (duplicate <id>)` — unique, because ids are — with its revision raised and an audit event
 * `identity.group_renamed` (no actor; and its log line) naming both groups (docs/decisions.md, "Group names that read alike").
 * Organization groups and departments keep `name_key` NULL: their names are the identity provider's.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE groups ADD COLUMN name_key TEXT`
  const rows = yield* sql`SELECT id, name, created_at, revision FROM groups WHERE kind = 'permission'`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Rows))
  )
  const ordered = [...rows].sort(
    (a, b) => sortable(a.created_at) - sortable(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  )
  const owners = new Map<string, string>()
  const now = new Date().toISOString()
  let renamed = 0
  for (const row of ordered) {
    const key = groupNameKey(row.name)
    const owner = owners.get(key)
    if (owner === undefined) {
      owners.set(key, row.id)
      yield* sql`UPDATE groups SET name_key = ${key} WHERE id = ${row.id}`
      continue
    }
    const name = `${row.name} (duplicate ${row.id})`
    yield* sql`UPDATE groups SET name = ${name}, name_key = ${groupNameKey(name)}, revision = revision + 1,
      updated_at = ${now} WHERE id = ${row.id}`
    yield* sql`INSERT INTO audit_events ${sql.insert({
      id: randomUUID(),
      at: now,
      actor_id: null,
      action: "identity.group_renamed",
      target_kind: "group",
      target_id: row.id,
      detail: JSON.stringify({
        name: { before: row.name, after: name },
        reason: "its name read like that of an older permission group",
        reads_like: owner,
        revision: Number(row.revision) + 1
      }),
      request_id: null
    })}`
    yield* securityEvent("identity.group_renamed", {
      actor: null,
      target_kind: "group",
      target_id: row.id,
      name: { before: row.name, after: name },
      reads_like: owner
    })
    renamed += 1
  }
  if (renamed > 0) yield* sql`UPDATE policy_version SET version = version + 1 WHERE id = 1`
  yield* sql`CREATE UNIQUE INDEX groups_permission_name_key ON groups (name_key) WHERE kind = 'permission'`
})
