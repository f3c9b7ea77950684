import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { StoredBoolean, toStoredBoolean } from "./columns.js"
import { organizationGroupRow } from "./groups.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

const Version = Schema.Array(Schema.Struct({ version: Schema.Union(Schema.Number, Schema.NumberFromString) }))
const VersionRecord = Schema.Array(
  Schema.Struct({ version: Schema.Union(Schema.Number, Schema.NumberFromString), applied_at: StoredTimestamp })
)
const OrganizationGroupRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literal("group", "department"),
  external_id: Schema.String,
  name: Schema.String
})
const DirectoryUserRow = Schema.Struct({
  id: Schema.String,
  external_subject: Schema.String,
  display_name: Schema.String,
  directory_active: StoredBoolean,
  directory_hash: Schema.NullOr(Schema.String)
})
export type DirectoryUserRow = typeof DirectoryUserRow.Type
const StoredRow = Schema.Struct({ user_id: Schema.String, group_ids: Schema.String })

/** A stored list of group ids (the gateway writes a JSON array of strings); anything else is a broken store. */
const groupIdsOf = (text: string): ReadonlyArray<string> => {
  const ids: unknown = JSON.parse(text)
  if (Array.isArray(ids) && ids.every((id) => typeof id === "string")) return ids
  throw new Error("directory_memberships.group_ids holds something other than a list of group ids")
}

/**
 * Rows of `directory_memberships` as read (`user_id`, `group_ids`), each list parsed. The lists are
 * checked by hand rather than by a Schema: counting members reads every one of up to 1.27 million ids
 * (src/store/memberships.ts), and a Schema check of each took longer than the count itself.
 */
export const readStoredLists = (rows: unknown) =>
  Effect.map(Schema.decodeUnknown(Schema.Array(StoredRow))(rows), (decoded) =>
    decoded.map((row) => ({ user_id: row.user_id, group_ids: groupIdsOf(row.group_ids) }))
  )

/** A person's directory memberships as a snapshot gives them: group ids, sorted, and their digest. */
export interface MembershipList {
  readonly userId: string
  readonly groupIds: ReadonlyArray<string>
  readonly hash: string | null
}

/** Rows per statement in bulk writes: well under both dialects' bound-parameter limits. */
const CHUNK = 1_000

const chunks = <A>(items: ReadonlyArray<A>, size = CHUNK): ReadonlyArray<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let index = 0; index < items.length; index += size) out.push(items.slice(index, index + size))
  return out
}

export interface NewDirectoryUser {
  readonly id: string
  readonly subject: string
  readonly name: string
  readonly active: boolean
}

/**
 * The bulk reads and writes of a directory snapshot (docs/directory.md), run inside the policy
 * transaction by src/identity/directory/apply.ts: whole-namespace reads, then only what changed is
 * written, in chunks.
 */
export class DirectoryRepo extends Effect.Service<DirectoryRepo>()("gateway/DirectoryRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const die = Effect.orDie

    const version = Effect.fn("DirectoryRepo.version")(function* (provider: string) {
      const rows = yield* sql`SELECT version FROM directory_versions WHERE provider = ${provider}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Version)),
        die
      )
      return rows[0]?.version
    })

    /** A provider's version and when its last snapshot was applied; undefined before its first. */
    const versionRecord = Effect.fn("DirectoryRepo.versionRecord")(function* (provider: string) {
      const rows = yield* sql`SELECT version, applied_at FROM directory_versions WHERE provider = ${provider}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(VersionRecord)),
        die
      )
      return rows[0]
    })

    /**
     * Sets a provider's version to `next` only while it is `expected` (docs/directory.md, "Resetting a
     * provider's version"); the row, and with it the provider's directory mode, stays. Whether it was set.
     */
    const resetVersion = Effect.fn("DirectoryRepo.resetVersion")(function* (
      provider: string,
      expected: number,
      next: number
    ) {
      const rows = yield* sql`UPDATE directory_versions SET version = ${next}
        WHERE provider = ${provider} AND version = ${expected} RETURNING provider`.pipe(die)
      return rows.length === 1
    })

    /** The providers snapshots were applied to. */
    const providers = Effect.fn("DirectoryRepo.providers")(function* () {
      const rows = yield* sql`SELECT provider FROM directory_versions`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ provider: Schema.String })))),
        die
      )
      return rows.map((row) => row.provider)
    })

    const recordVersion = Effect.fn("DirectoryRepo.recordVersion")(function* (
      provider: string,
      next: number,
      summary: object,
      at: Date
    ) {
      yield* sql`INSERT INTO directory_versions ${sql.insert({
        provider,
        version: next,
        applied_at: toStoredTimestamp(at),
        summary: JSON.stringify(summary)
      })} ON CONFLICT (provider) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at,
        summary = excluded.summary`.pipe(die)
    })

    const organizationGroups = Effect.fn("DirectoryRepo.organizationGroups")((provider: string) =>
      sql`SELECT id, kind, external_id, name FROM groups WHERE provider = ${provider} AND kind IN ('group', 'department')`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(OrganizationGroupRow))),
        die
      )
    )

    const insertGroups = Effect.fn("DirectoryRepo.insertGroups")(function* (
      provider: string,
      groups: ReadonlyArray<{
        readonly kind: "group" | "department"
        readonly externalId: string
        readonly name: string
      }>,
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      const created = groups.map((group) => ({ ...group, id: randomUUID() }))
      for (const part of chunks(created, 500)) {
        yield* sql`INSERT INTO groups ${sql.insert(
          part.map((group) => organizationGroupRow(group.id, provider, group.kind, group, stamp))
        )}`.pipe(die)
      }
      return created
    })

    const renameGroup = Effect.fn("DirectoryRepo.renameGroup")((id: string, name: string, at: Date) =>
      sql`UPDATE groups SET name = ${name}, updated_at = ${toStoredTimestamp(at)} WHERE id = ${id}`.pipe(die)
    )

    const users = Effect.fn("DirectoryRepo.users")((namespace: string) =>
      sql`SELECT id, external_subject, display_name, directory_active, directory_hash FROM users
        WHERE kind = 'enterprise' AND namespace = ${namespace}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(DirectoryUserRow))),
        die
      )
    )

    /** People the directory names who never signed in: pending, like a first sign-in. */
    const insertUsers = Effect.fn("DirectoryRepo.insertUsers")(function* (
      namespace: string,
      people: ReadonlyArray<NewDirectoryUser>,
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      for (const part of chunks(people, 500)) {
        yield* sql`INSERT INTO users ${sql.insert(
          part.map((person) => ({
            id: person.id,
            kind: "enterprise",
            username: null,
            display_name: person.name,
            status: "pending",
            namespace,
            external_subject: person.subject,
            directory_active: toStoredBoolean(person.active),
            membership_verified_at: stamp,
            created_at: stamp,
            updated_at: stamp
          }))
        )}`.pipe(die)
      }
    })

    const setActive = Effect.fn("DirectoryRepo.setActive")(function* (ids: ReadonlyArray<string>, active: boolean) {
      for (const part of chunks(ids)) {
        yield* sql`UPDATE users SET directory_active = ${toStoredBoolean(active)} WHERE ${sql.in("id", part)}`.pipe(die)
      }
    })

    const setName = Effect.fn("DirectoryRepo.setName")((id: string, name: string) =>
      sql`UPDATE users SET display_name = ${name} WHERE id = ${id}`.pipe(die)
    )

    /** Rows per JSON-array statement of the bulk writes below (a few MiB of JSON each). */
    const JSON_CHUNK = 25_000
    /**
     * A JSON array bound as one parameter and read back as rows (`json_each` / `jsonb_array_elements`):
     * one statement per 25,000 rows instead of one per few hundred, on both dialects.
     */
    const jsonRows = (json: string, fields: ReadonlyArray<string>) =>
      sql.onDialectOrElse({
        pg: () =>
          sql`(SELECT ${sql.literal(fields.map((field, index) => `x->>${index} AS ${field}`).join(", "))}
            FROM jsonb_array_elements(${json}::jsonb) AS x)`,
        orElse: () =>
          sql`(SELECT ${sql.literal(fields.map((field, index) => `json_extract(value, '$[${index}]') AS ${field}`).join(", "))}
            FROM json_each(${json}))`
      })

    /**
     * The directory memberships last given to these people (only those a snapshot changes are read):
     * group ids by user id; people without any are absent.
     */
    const membershipsOf = Effect.fn("DirectoryRepo.membershipsOf")(function* (userIds: ReadonlyArray<string>) {
      const found = new Map<string, ReadonlyArray<string>>()
      for (const part of chunks(userIds, JSON_CHUNK)) {
        const ids = JSON.stringify(part.map((id) => [id]))
        const rows = yield* sql`SELECT d.user_id, d.group_ids FROM directory_memberships d
          JOIN ${jsonRows(ids, ["id"])} AS j ON j.id = d.user_id`.pipe(Effect.flatMap(readStoredLists), die)
        for (const row of rows) found.set(row.user_id, row.group_ids)
      }
      return found
    })

    /** The directory confirmed these people's memberships now (`enterprise_membership_max_age` counts from here). */
    const setVerified = Effect.fn("DirectoryRepo.setVerified")(function* (ids: ReadonlyArray<string>, at: Date) {
      const stamp = toStoredTimestamp(at)
      const when = sql.onDialectOrElse({ pg: () => sql`${stamp}::timestamptz`, orElse: () => sql`${stamp}` })
      for (const part of chunks(ids, JSON_CHUNK)) {
        const rows = jsonRows(JSON.stringify(part.map((id) => [id])), ["id"])
        yield* sql`UPDATE users SET membership_verified_at = ${when} FROM ${rows} AS j WHERE users.id = j.id`.pipe(die)
      }
    })

    /** Directory membership takes precedence: sign-in claims of the namespace's people are dropped. */
    const dropClaims = Effect.fn("DirectoryRepo.dropClaims")((namespace: string) =>
      sql`DELETE FROM memberships WHERE source = 'claims'
        AND user_id IN (SELECT id FROM users WHERE kind = 'enterprise' AND namespace = ${namespace})`.pipe(die)
    )

    /**
     * Sets these people's directory memberships to exactly the group ids given (sorted, one row per
     * person; an empty list removes the row) and records each list's digest on the person.
     */
    const replaceMemberships = Effect.fn("DirectoryRepo.replaceMemberships")(function* (
      lists: ReadonlyArray<MembershipList>,
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      const emptied = lists.filter((list) => list.groupIds.length === 0).map((list) => list.userId)
      for (const part of chunks(emptied)) {
        yield* sql`DELETE FROM directory_memberships WHERE ${sql.in("user_id", part)}`.pipe(die)
      }
      // 500 people per statement: up to 5 MiB of ids at 256 memberships each.
      for (const part of chunks(
        lists.filter((list) => list.groupIds.length > 0),
        500
      )) {
        yield* sql`INSERT INTO directory_memberships ${sql.insert(
          part.map((list) => ({ user_id: list.userId, group_ids: JSON.stringify(list.groupIds), updated_at: stamp }))
        )} ON CONFLICT (user_id) DO UPDATE SET group_ids = excluded.group_ids, updated_at = excluded.updated_at`.pipe(
          die
        )
      }
      for (const part of chunks(lists, JSON_CHUNK)) {
        const rows = jsonRows(JSON.stringify(part.map((list) => [list.userId, list.hash])), ["id", "hash"])
        yield* sql`UPDATE users SET directory_hash = j.hash FROM ${rows} AS j WHERE users.id = j.id`.pipe(die)
      }
    })

    return {
      version,
      versionRecord,
      resetVersion,
      providers,
      recordVersion,
      organizationGroups,
      insertGroups,
      renameGroup,
      users,
      insertUsers,
      setActive,
      setName,
      setVerified,
      membershipsOf,
      dropClaims,
      replaceMemberships
    } as const
  })
}) {}
