import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { readStoredLists } from "./directory.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/**
 * Who owns a membership: an administrator (`direct`, locally managed groups only) or the upstream that
 * asserted it (`claims` at sign-in, `directory` in a pushed snapshot), which alone may change it.
 */
export const MembershipSource = Schema.Literal("direct", "claims", "directory")
export type MembershipSource = typeof MembershipSource.Type

export const MembershipRow = Schema.Struct({
  user_id: Schema.String,
  group_id: Schema.String,
  source: MembershipSource,
  created_at: StoredTimestamp
})
export type MembershipRow = typeof MembershipRow.Type

/** People whose directory lists SQLite reads per statement when it counts members (a few milliseconds each). */
export const COUNT_SLICE = 200

/** The rest of this turn of the event loop for everything waiting on I/O: resumes in the check phase. */
const nextTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Persistence of memberships: `memberships` (direct and claims) and, read alongside, the per-person
 * rows of `directory_memberships`. Callers run writes inside the policy transaction (src/policy/writes.ts).
 */
export class MembershipRepo extends Effect.Service<MembershipRepo>()("gateway/MembershipRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // Directory memberships live one row per person in `directory_memberships` (a JSON array of group
    // ids); readers see them as rows of source `directory` beside the rows of `memberships`.
    const unnest = sql.onDialectOrElse({
      pg: () => sql`jsonb_array_elements_text(d.group_ids::jsonb) AS j(value)`,
      orElse: () => sql`json_each(d.group_ids) AS j`
    })
    // Directory rows in `memberships` itself (an earlier build's, written after a downgrade) never count.
    const ofUsersWhere = (userIds: ReadonlyArray<string>) =>
      sql`SELECT user_id, group_id, source, created_at FROM memberships
        WHERE source <> 'directory' AND user_id IN ${sql.in(userIds)}
        UNION ALL
        SELECT d.user_id, j.value AS group_id, 'directory' AS source, d.updated_at AS created_at
        FROM directory_memberships d, ${unnest} WHERE d.user_id IN ${sql.in(userIds)}`
    const ofUser = SqlSchema.findAll({
      Request: Schema.String,
      Result: MembershipRow,
      execute: (userId) => sql`${ofUsersWhere([userId])} ORDER BY group_id`
    })
    const ofUsers = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: MembershipRow,
      execute: (userIds) => sql`${ofUsersWhere(userIds)} ORDER BY user_id, group_id`
    })
    const Counts = Schema.Array(
      Schema.Struct({ group_id: Schema.String, members: Schema.Union(Schema.Number, Schema.NumberFromString) })
    )
    const countRows = (query: Statement.Statement<unknown>) =>
      query.pipe(
        Effect.flatMap(Schema.decodeUnknown(Counts)),
        Effect.map((rows) => rows.map((row) => [row.group_id, row.members] as const))
      )
    // Directory members per group: expanding every list costs about 0.45 s at 1.27 million
    // memberships, so the counts are kept until a snapshot is applied. Every applied snapshot writes
    // its provider's version and the time it was applied; an administrator's reset lowers a version
    // (docs/directory.md) and a later snapshot may then carry a version seen before, but never with
    // the same time, so the pair changes exactly when a snapshot is applied.
    const directoryMarker = sql`SELECT provider, version, applied_at FROM directory_versions ORDER BY provider`.pipe(
      Effect.flatMap(
        Schema.decodeUnknown(
          Schema.Array(
            Schema.Struct({
              provider: Schema.String,
              version: Schema.Union(Schema.Number, Schema.String),
              applied_at: StoredTimestamp
            })
          )
        )
      ),
      Effect.map((rows) =>
        JSON.stringify(rows.map((row) => [row.provider, String(row.version), row.applied_at.toISOString()]))
      )
    )
    const countInSlices = Effect.gen(function* () {
      const counts = new Map<string, number>()
      let after = ""
      for (;;) {
        const rows = yield* sql`SELECT user_id, group_ids FROM directory_memberships
          WHERE user_id > ${after} ORDER BY user_id LIMIT ${COUNT_SLICE}`.pipe(Effect.flatMap(readStoredLists))
        for (const row of rows) for (const id of row.group_ids) counts.set(id, (counts.get(id) ?? 0) + 1)
        if (rows.length < COUNT_SLICE) return [...counts]
        after = rows[rows.length - 1]!.user_id
        yield* nextTurn
      }
    })
    // One statement over every list: PostgreSQL runs it in its own process while the gateway serves
    // on. SQLite runs in the gateway's thread, where it would hold up every other request for its
    // whole length (0.5 s at 1.27 million memberships): there the lists are read a slice of people at
    // a time and counted here, the event loop free between slices (docs/directory.md, "How long it takes").
    const countAtOnce = countRows(
      sql`SELECT j.value AS group_id, COUNT(*) AS members FROM directory_memberships d, ${unnest} GROUP BY j.value`
    )
    const sliced = sql.onDialectOrElse({ pg: () => false, orElse: () => true })
    let directoryCounts:
      | { readonly marker: string; readonly counts: ReadonlyArray<readonly [string, number]> }
      | undefined
    const directoryCountsNow = Effect.gen(function* () {
      let marker = yield* directoryMarker
      if (directoryCounts?.marker === marker) return directoryCounts.counts
      // A snapshot applied between two slices leaves counts that mix before and after: counted again.
      // Two slice-wise counts interrupted so, and the third is one statement, which cannot be.
      for (let attempt = 1; ; attempt++) {
        const counts = yield* sliced && attempt < 3 ? countInSlices : countAtOnce
        const now = yield* directoryMarker
        if (now === marker || !sliced || attempt >= 3) {
          // Kept under the versions read before counting: a snapshot that landed since is counted next time.
          directoryCounts = { marker, counts }
          return counts
        }
        marker = now
      }
    })

    const forUser = Effect.fn("MembershipRepo.forUser")((userId: string) => ofUser(userId).pipe(Effect.orDie))
    const forUsers = Effect.fn("MembershipRepo.forUsers")((userIds: ReadonlyArray<string>) =>
      userIds.length === 0 ? Effect.succeed([]) : ofUsers(userIds).pipe(Effect.orDie)
    )
    /** Members per group id (groups without members are absent). */
    const countByGroup = Effect.gen(function* () {
      const counts = new Map<string, number>()
      const local = yield* countRows(
        sql`SELECT group_id, COUNT(*) AS members FROM memberships WHERE source <> 'directory' GROUP BY group_id`
      )
      for (const [groupId, members] of [...local, ...(yield* directoryCountsNow)]) {
        counts.set(groupId, (counts.get(groupId) ?? 0) + members)
      }
      return counts as ReadonlyMap<string, number>
    }).pipe(Effect.orDie, Effect.withSpan("MembershipRepo.countByGroup"))

    /** Members of one group: what a written group's record shows, without counting every group's. */
    const countOf = Effect.fn("MembershipRepo.countOf")(function* (groupId: string) {
      const local = yield* countRows(
        sql`SELECT group_id, COUNT(*) AS members FROM memberships
          WHERE group_id = ${groupId} AND source <> 'directory' GROUP BY group_id`
      ).pipe(Effect.orDie)
      const directory = (yield* directoryCountsNow.pipe(Effect.orDie)).find(([id]) => id === groupId)?.[1] ?? 0
      return (local[0]?.[1] ?? 0) + directory
    })

    /** Members of each of `groupIds` (one statement, however many are asked): what a page of groups shows. */
    const countsOf = Effect.fn("MembershipRepo.countsOf")(function* (groupIds: ReadonlyArray<string>) {
      const counts = new Map<string, number>(groupIds.map((id) => [id, 0]))
      if (groupIds.length === 0) return counts as ReadonlyMap<string, number>
      const local = yield* countRows(
        sql`SELECT group_id, COUNT(*) AS members FROM memberships
          WHERE ${sql.in("group_id", groupIds)} AND source <> 'directory' GROUP BY group_id`
      ).pipe(Effect.orDie)
      for (const [groupId, members] of [...local, ...(yield* directoryCountsNow.pipe(Effect.orDie))]) {
        const current = counts.get(groupId)
        if (current !== undefined) counts.set(groupId, current + members)
      }
      return counts as ReadonlyMap<string, number>
    })

    /**
     * How many groups each of `userIds` is in, every source together (two statements however many are
     * asked; a directory list counted by its length, never expanded): what a page of people shows.
     */
    const countsForUsers = Effect.fn("MembershipRepo.countsForUsers")(function* (userIds: ReadonlyArray<string>) {
      const counts = new Map<string, number>(userIds.map((id) => [id, 0]))
      if (userIds.length === 0) return counts as ReadonlyMap<string, number>
      const length = sql.onDialectOrElse({
        pg: () => sql`jsonb_array_length(group_ids::jsonb)`,
        orElse: () => sql`json_array_length(group_ids)`
      })
      const rows = yield* sql`SELECT user_id AS group_id, COUNT(*) AS members FROM memberships
          WHERE ${sql.in("user_id", userIds)} AND source <> 'directory' GROUP BY user_id
        UNION ALL
        SELECT user_id AS group_id, ${length} AS members FROM directory_memberships
          WHERE ${sql.in("user_id", userIds)}`.pipe((statement) => countRows(statement), Effect.orDie)
      for (const [userId, members] of rows) counts.set(userId, (counts.get(userId) ?? 0) + members)
      return counts as ReadonlyMap<string, number>
    })

    /**
     * Replaces the memberships of `userId` owned by `source` with exactly `groupIds`. Directory
     * memberships are written by a snapshot only (src/store/directory.ts).
     */
    const replace = Effect.fn("MembershipRepo.replace")(function* (
      userId: string,
      source: Exclude<MembershipSource, "directory">,
      groupIds: ReadonlyArray<string>,
      at: Date
    ) {
      const current = (yield* forUser(userId)).filter((row) => row.source === source).map((row) => row.group_id)
      const wanted = new Set(groupIds)
      const removed = current.filter((id) => !wanted.has(id))
      const kept = new Set(current)
      const added = [...wanted].filter((id) => !kept.has(id))
      if (removed.length > 0) {
        yield* sql`DELETE FROM memberships WHERE user_id = ${userId} AND source = ${source}
          AND ${sql.in("group_id", removed)}`.pipe(Effect.orDie)
      }
      if (added.length > 0) {
        const stamp = toStoredTimestamp(at)
        yield* sql`INSERT INTO memberships ${sql.insert(
          added.map((groupId) => ({ user_id: userId, group_id: groupId, source, created_at: stamp }))
        )}`.pipe(Effect.orDie)
      }
      return { added, removed }
    })

    return { forUser, forUsers, countByGroup, countOf, countsOf, countsForUsers, replace } as const
  })
}) {}
