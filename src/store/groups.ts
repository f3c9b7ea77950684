import { randomUUID } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { groupNameKey } from "../policy/group-name.js"
import { lookAlikeKey } from "../policy/look-alike.js"
import { encodePermissions, type Permissions } from "../policy/permissions.js"
import { StoredPermissions } from "../policy/stored-permissions.js"
import { StoredBoolean, StoredRevision, toStoredBoolean } from "./columns.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"
import type { ConditionalWrite } from "./users.js"

/** The provider value of independent permission groups (docs/access-policy.md, "The model"). */
export const PERMISSIONS_PROVIDER = "gateway:permissions"
/** The id of the built-in Administrators group (created with the schema, migration 0009). */
export const ADMINISTRATORS_GROUP_ID = "administrators"

export const GroupKind = Schema.Literal("permission", "group", "department")
export type GroupKind = typeof GroupKind.Type

const GroupColumns = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  provider: Schema.String,
  kind: GroupKind,
  external_id: Schema.NullOr(Schema.String),
  managed_locally: StoredBoolean,
  builtin: Schema.NullOr(Schema.String),
  enabled: StoredBoolean,
  permissions: Schema.NullOr(StoredPermissions),
  revision: StoredRevision,
  created_at: StoredTimestamp,
  updated_at: StoredTimestamp
})

/** A group with the organization groups mapped onto it (`source_groups`; permission groups only). */
export interface GroupRow extends Schema.Schema.Type<typeof GroupColumns> {
  readonly source_groups: ReadonlyArray<string>
}

const SourceRow = Schema.Struct({ group_id: Schema.String, source_group_id: Schema.String })

export interface NewPermissionGroup {
  readonly name: string
  readonly enabled: boolean
  readonly permissions: Permissions
  readonly sourceGroups: ReadonlyArray<string>
  readonly at: Date
}

export interface GroupChange {
  readonly name?: string
  readonly enabled?: boolean
  readonly permissions?: Permissions
  readonly sourceGroups?: ReadonlyArray<string>
}

export interface OrganizationGroup {
  readonly externalId: string
  readonly name: string
}

const RevisionRow = Schema.Array(Schema.Struct({ revision: StoredRevision }))
const IdRows = Schema.Array(Schema.Struct({ id: Schema.String }))
const NameRows = Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))

/** Groups read per query when every group is loaded a slice at a time (`slice`). */
export const GROUP_SLICE = 16

/** The stored row of a new organization group or department: never managed locally, no permissions. */
export const organizationGroupRow = (
  id: string,
  provider: string,
  kind: "group" | "department",
  group: OrganizationGroup,
  stamp: string
) => ({
  id,
  name: group.name,
  provider,
  kind,
  external_id: group.externalId,
  managed_locally: 0,
  builtin: null,
  enabled: 1,
  permissions: null,
  revision: 1,
  created_at: stamp,
  updated_at: stamp
})

/**
 * Persistence of `groups` and `group_sources`. Writes are conditioned on the revision the caller read
 * (`If-Match`), in one UPDATE each; callers run them inside the policy transaction (src/policy/writes.ts).
 */
/** The advisory lock space of permission group look-alike keys (PostgreSQL; an arbitrary constant). */
const LOOK_KEY_LOCK = 74_661

export class GroupRepo extends Effect.Service<GroupRepo>()("gateway/GroupRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const allColumns = SqlSchema.findAll({
      Request: Schema.Void,
      Result: GroupColumns,
      execute: () => sql`SELECT * FROM groups ORDER BY kind, name, id`
    })
    const allSources = SqlSchema.findAll({
      Request: Schema.Void,
      Result: SourceRow,
      execute: () => sql`SELECT group_id, source_group_id FROM group_sources ORDER BY group_id, source_group_id`
    })
    const oneColumns = SqlSchema.findOne({
      Request: Schema.String,
      Result: GroupColumns,
      execute: (id) => sql`SELECT * FROM groups WHERE id = ${id}`
    })
    const sourcesOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: SourceRow,
      execute: (id) => sql`SELECT group_id, source_group_id FROM group_sources WHERE group_id = ${id}
        ORDER BY source_group_id`
    })

    /** Every group, sources attached. Groups are few (thousands): the policy state holds them all. */
    const list = Effect.gen(function* () {
      const [columns, sources] = yield* Effect.all([allColumns(undefined), allSources(undefined)])
      return withSources(columns, sources)
    }).pipe(Effect.orDie, Effect.withSpan("GroupRepo.list"))

    const find = Effect.fn("GroupRepo.find")(function* (id: string) {
      const row = yield* oneColumns(id).pipe(Effect.orDie)
      if (row._tag === "None") return undefined
      const sources = yield* sourcesOf(id).pipe(Effect.orDie)
      return { ...row.value, source_groups: sources.map((source) => source.source_group_id) } satisfies GroupRow
    })

    const withSources = (
      columns: ReadonlyArray<typeof GroupColumns.Type>,
      sources: ReadonlyArray<typeof SourceRow.Type>
    ) => {
      const byGroup = new Map<string, Array<string>>()
      for (const row of sources) {
        const list = byGroup.get(row.group_id)
        if (list === undefined) byGroup.set(row.group_id, [row.source_group_id])
        else list.push(row.source_group_id)
      }
      return columns.map((row): GroupRow => ({ ...row, source_groups: byGroup.get(row.id) ?? [] }))
    }

    /** The groups of `ids` that exist, sources attached (a policy change reloads only what it changed). */
    const findMany = Effect.fn("GroupRepo.findMany")(function* (ids: ReadonlyArray<string>) {
      if (ids.length === 0) return []
      const columns = yield* sql`SELECT * FROM groups WHERE ${sql.in("id", ids)} ORDER BY id`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(GroupColumns))),
        Effect.orDie
      )
      const sources = yield* sql`SELECT group_id, source_group_id FROM group_sources
        WHERE ${sql.in("group_id", ids)} ORDER BY group_id, source_group_id`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(SourceRow))),
        Effect.orDie
      )
      return withSources(columns, sources)
    })

    /**
     * The groups after id `after` in id order, at most `limit` (GROUP_SLICE): loading every group a
     * slice at a time leaves the event loop free between slices (src/policy/access-state.ts).
     */
    const slice = Effect.fn("GroupRepo.slice")(function* (after: string, limit: number = GROUP_SLICE) {
      const ids = yield* sql`SELECT id FROM groups WHERE id > ${after} ORDER BY id LIMIT ${limit}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(IdRows)),
        Effect.orDie
      )
      return yield* findMany(ids.map((row) => row.id))
    })

    /** Names of the groups of `ids` (what a user record shows of its memberships), without decoding permissions. */
    const namesOf = Effect.fn("GroupRepo.namesOf")(function* (ids: ReadonlyArray<string>) {
      if (ids.length === 0) return new Map<string, string>()
      const rows = yield* sql`SELECT id, name FROM groups WHERE ${sql.in("id", ids)}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(NameRows)),
        Effect.orDie
      )
      return new Map(rows.map((row) => [row.id, row.name]))
    })

    /** The permission group other than `except` whose key `column` is `key`: one lookup in that column's index. */
    const permissionGroupByKey = (column: "name_key" | "look_key", key: string, except: string | undefined) =>
      sql`SELECT id, name FROM groups WHERE kind = 'permission' AND ${sql(column)} = ${key}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(NameRows)),
        Effect.orDie,
        Effect.map((rows) => rows.find((row) => row.id !== except))
      )

    /**
     * The permission group whose name reads like `name` (equal `groupNameKey`, docs/access-policy.md,
     * "Group names"), other than `except`; answered by the unique index on `name_key`.
     */
    const permissionGroupNamedLike = Effect.fn("GroupRepo.permissionGroupNamedLike")(
      (name: string, except: string | undefined) => permissionGroupByKey("name_key", groupNameKey(name), except)
    )

    /**
     * A permission group whose name looks like `name` (equal `lookAlikeKey`: UTS #39 skeletons), other
     * than `except`; one lookup in the `look_key` index. The key is not unique in the store (older
     * look-alikes are kept), so on PostgreSQL the writing transaction first takes an advisory lock on
     * the key: two writes of look-alike names queue, and the second sees the first's row. SQLite has
     * one writer at a time already.
     */
    const permissionGroupLookingLike = Effect.fn("GroupRepo.permissionGroupLookingLike")(function* (
      name: string,
      except: string | undefined
    ) {
      const key = lookAlikeKey(name)
      yield* sql
        .onDialectOrElse({
          pg: () => sql`SELECT pg_advisory_xact_lock(${LOOK_KEY_LOCK}, hashtext(${key}))`,
          orElse: () => Effect.void
        })
        .pipe(Effect.orDie)
      return yield* permissionGroupByKey("look_key", key, except)
    })

    const replaceSources = (id: string, sources: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        yield* sql`DELETE FROM group_sources WHERE group_id = ${id}`
        if (sources.length > 0) {
          yield* sql`INSERT INTO group_sources ${sql.insert(
            sources.map((source) => ({ group_id: id, source_group_id: source }))
          )}`
        }
      })

    /**
     * Inserts a permission group; undefined, and nothing written, when a permission group whose name
     * reads alike exists (the unique index on `name_key` decides, so two racing creates cannot both win).
     */
    const insertPermissionGroup = Effect.fn("GroupRepo.insertPermissionGroup")(function* (group: NewPermissionGroup) {
      const id = randomUUID()
      const at = toStoredTimestamp(group.at)
      const inserted = yield* sql`INSERT INTO groups ${sql.insert({
        id,
        name: group.name,
        name_key: groupNameKey(group.name),
        look_key: lookAlikeKey(group.name),
        provider: PERMISSIONS_PROVIDER,
        kind: "permission",
        external_id: null,
        managed_locally: 1,
        builtin: null,
        enabled: toStoredBoolean(group.enabled),
        permissions: encodePermissions(group.permissions),
        revision: 1,
        created_at: at,
        updated_at: at
      })} ON CONFLICT (name_key) WHERE kind = 'permission' DO NOTHING RETURNING id`.pipe(
        Effect.flatMap(Schema.decodeUnknown(IdRows)),
        Effect.orDie
      )
      if (inserted.length === 0) return undefined
      yield* replaceSources(id, group.sourceGroups).pipe(Effect.orDie)
      return id
    })

    /** Applies `change` if the group is still at revision `expected`; the sources are replaced with it. */
    const updateIfRevision = Effect.fn("GroupRepo.updateIfRevision")(function* (
      id: string,
      expected: number,
      change: GroupChange,
      at: Date
    ) {
      const name = change.name === undefined ? sql`name` : sql`${change.name}`
      const nameKey = change.name === undefined ? sql`name_key` : sql`${groupNameKey(change.name)}`
      const lookKey = change.name === undefined ? sql`look_key` : sql`${lookAlikeKey(change.name)}`
      const enabled = change.enabled === undefined ? sql`enabled` : sql`${toStoredBoolean(change.enabled)}`
      const permissions =
        change.permissions === undefined ? sql`permissions` : sql`${encodePermissions(change.permissions)}`
      const rows =
        yield* sql`UPDATE groups SET name = ${name}, name_key = ${nameKey}, look_key = ${lookKey}, enabled = ${enabled}, permissions = ${permissions},
        revision = revision + 1, updated_at = ${toStoredTimestamp(at)}
        WHERE id = ${id} AND revision = ${expected} RETURNING revision`.pipe(
          Effect.flatMap(Schema.decodeUnknown(RevisionRow)),
          Effect.orDie
        )
      const written = rows[0]
      if (written === undefined) {
        const current = yield* oneColumns(id).pipe(Effect.orDie)
        return current._tag === "None"
          ? ({ _tag: "Missing" } as ConditionalWrite)
          : ({ _tag: "Stale", revision: current.value.revision } as ConditionalWrite)
      }
      if (change.sourceGroups !== undefined) yield* replaceSources(id, change.sourceGroups).pipe(Effect.orDie)
      return { _tag: "Written", revision: written.revision } as ConditionalWrite
    })

    /**
     * Creates or renames the organization groups (or departments) of `provider`, keyed by their stable
     * upstream id; returns the internal id of each, in order. Sign-in and directory snapshots call this.
     */
    const upsertOrganizationGroups = Effect.fn("GroupRepo.upsertOrganizationGroups")(function* (
      provider: string,
      kind: "group" | "department",
      groups: ReadonlyArray<OrganizationGroup>,
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      const ids: Array<string> = []
      for (const group of groups) {
        const rows = yield* sql`INSERT INTO groups ${sql.insert(
          organizationGroupRow(randomUUID(), provider, kind, group, stamp)
        )} ON CONFLICT (provider, kind, external_id) WHERE external_id IS NOT NULL
          DO UPDATE SET name = excluded.name RETURNING id`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String })))),
          Effect.orDie
        )
        ids.push(rows[0]!.id)
      }
      return ids
    })

    return {
      list,
      find,
      findMany,
      slice,
      namesOf,
      permissionGroupNamedLike,
      permissionGroupLookingLike,
      insertPermissionGroup,
      updateIfRevision,
      upsertOrganizationGroups
    } as const
  })
}) {}
