/**
 * Migration 0015 and the unique key of permission group names (docs/access-policy.md, "Group names";
 * docs/decisions.md, "Group names that read alike"), on SQLite and on PostgreSQL: existing names get
 * their key; of names already stored that read alike, the oldest keeps its name and each later one is
 * renamed `<name> (duplicate <id>)`, its revision raised and an audit event written; and two inserts
 * of look-alike names racing outside the policy transaction still make one group.
 */
import { Migrator, SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { GroupRepo } from "../../src/store/groups.js"
import { MIGRATIONS_TABLE, migrations } from "../../src/store/migrations/index.js"
import { rawSqlLayer, storeKinds, testStoreLayer, withStorage } from "../support/databases.js"

const before0015 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0015"))

const migrate = (record: typeof migrations) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({
      pg: () => sql`CREATE TABLE IF NOT EXISTS ${sql(MIGRATIONS_TABLE)} (
        migration_id integer PRIMARY KEY,
        created_at timestamp with time zone NOT NULL DEFAULT now(),
        name text NOT NULL
      )`,
      orElse: () => Effect.void
    })
    yield* Migrator.make({})({ loader: Migrator.fromRecord(record), table: MIGRATIONS_TABLE })
  })

const permissionGroup = (id: string, name: string, createdAt: string) => ({
  id,
  name,
  provider: "gateway:permissions",
  kind: "permission",
  external_id: null,
  managed_locally: 1,
  builtin: null,
  enabled: 1,
  permissions: JSON.stringify({ roles: [], scopes: [], access: [] }),
  revision: 3,
  created_at: createdAt,
  updated_at: createdAt
})

const Rows = Schema.Array(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    name_key: Schema.NullOr(Schema.String),
    revision: Schema.Union(Schema.Number, Schema.NumberFromString)
  })
)

describe.each(storeKinds)("permission group name keys (%s)", (kind) => {
  it.scoped(
    "migration 0015 keys every permission group; later look-alikes of an older name are renamed, audited, their revision raised",
    () =>
      Effect.gen(function* () {
        const storage = yield* withStorage(kind)
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* migrate(before0015)
          yield* sql`INSERT INTO groups ${sql.insert([
            permissionGroup("g-b", "Admins2", "2026-01-01T00:00:00.000Z"),
            // Same instant as g-b: the smaller id is the older.
            permissionGroup("g-a", "admins2 ", "2026-01-01T00:00:00.000Z"),
            permissionGroup("g-c", "Admins\u200b2", "2026-02-01T00:00:00.000Z"),
            permissionGroup("g-d", "Other", "2026-03-01T00:00:00.000Z")
          ])}`
          yield* sql`INSERT INTO groups ${sql.insert({
            ...permissionGroup("org", "admins2", "2025-01-01T00:00:00.000Z"),
            provider: "oidc:test",
            kind: "group",
            external_id: "admins2",
            managed_locally: 0,
            permissions: null
          })}`
          yield* migrate(migrations)

          const rows = yield* sql`SELECT id, name, name_key, revision FROM groups ORDER BY id`.pipe(
            Effect.flatMap(Schema.decodeUnknown(Rows))
          )
          const byId = new Map(rows.map((row) => [row.id, row]))
          expect(byId.get("administrators")).toMatchObject({ name: "Administrators", name_key: "administrators" })
          expect(byId.get("g-a")).toMatchObject({ name: "admins2 ", name_key: "admins2", revision: 3 })
          expect(byId.get("g-b")).toMatchObject({ name: "Admins2 (duplicate g-b)", revision: 4 })
          expect(byId.get("g-c")).toMatchObject({ name: "Admins\u200b2 (duplicate g-c)", revision: 4 })
          expect(byId.get("g-d")).toMatchObject({ name: "Other", name_key: "other", revision: 3 })
          // An organization group's name is its identity provider's: no key, never renamed.
          expect(byId.get("org")).toMatchObject({ name: "admins2", name_key: null })

          const audited = yield* sql`SELECT target_id, action, actor_id, detail FROM audit_events ORDER BY target_id`
          expect(audited.map((row) => [row["target_id"], row["action"], row["actor_id"]])).toEqual([
            ["g-b", "identity.group_renamed", null],
            ["g-c", "identity.group_renamed", null]
          ])
          expect(JSON.parse(String(audited[0]!["detail"]))).toMatchObject({
            name: { before: "Admins2", after: "Admins2 (duplicate g-b)" },
            reads_like: "g-a",
            revision: 4
          })
          // The unique index holds from now on.
          const again = yield* sql`INSERT INTO groups ${sql.insert({
            ...permissionGroup("g-e", "ADMINS2", "2026-04-01T00:00:00.000Z"),
            name_key: "admins2"
          })}`.pipe(Effect.either)
          expect(again._tag).toBe("Left")
        }).pipe(Effect.provide(rawSqlLayer(storage)))
      })
  )

  it.scoped("two inserts of look-alike names racing outside the policy transaction make one group", () =>
    Effect.gen(function* () {
      const groups = yield* GroupRepo
      const at = new Date(0)
      const insert = (name: string) =>
        groups.insertPermissionGroup({
          name,
          enabled: true,
          permissions: { roles: [], scopes: [], access: [] },
          sourceGroups: [],
          at
        })
      const ids = yield* Effect.all([insert("Night shift"), insert("NIGHT SHIFT"), insert("night  shift")], {
        concurrency: "unbounded"
      })
      expect(ids.filter((id) => id !== undefined)).toHaveLength(1)
      expect(yield* groups.permissionGroupNamedLike("Night Shift", undefined)).toBeDefined()
    }).pipe(Effect.provide(GroupRepo.Default.pipe(Layer.provideMerge(testStoreLayer(kind)), Layer.orDie)))
  )
})
