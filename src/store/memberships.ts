import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
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

/** Persistence of `memberships`. Callers run writes inside the policy transaction (src/policy/writes.ts). */
export class MembershipRepo extends Effect.Service<MembershipRepo>()("gateway/MembershipRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const ofUser = SqlSchema.findAll({
      Request: Schema.String,
      Result: MembershipRow,
      execute: (userId) => sql`SELECT * FROM memberships WHERE user_id = ${userId} ORDER BY group_id`
    })
    const ofUsers = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: MembershipRow,
      execute: (userIds) =>
        sql`SELECT * FROM memberships WHERE ${sql.in("user_id", userIds)} ORDER BY user_id, group_id`
    })
    const counts = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ group_id: Schema.String, members: Schema.Union(Schema.Number, Schema.NumberFromString) }),
      execute: () => sql`SELECT group_id, COUNT(*) AS members FROM memberships GROUP BY group_id`
    })

    const forUser = Effect.fn("MembershipRepo.forUser")((userId: string) => ofUser(userId).pipe(Effect.orDie))
    const forUsers = Effect.fn("MembershipRepo.forUsers")((userIds: ReadonlyArray<string>) =>
      userIds.length === 0 ? Effect.succeed([]) : ofUsers(userIds).pipe(Effect.orDie)
    )
    /** Members per group id (groups without members are absent). */
    const countByGroup = counts(undefined).pipe(
      Effect.map((rows) => new Map(rows.map((row) => [row.group_id, row.members]))),
      Effect.orDie,
      Effect.withSpan("MembershipRepo.countByGroup")
    )

    /** Replaces the memberships of `userId` owned by `source` with exactly `groupIds`. */
    const replace = Effect.fn("MembershipRepo.replace")(function* (
      userId: string,
      source: MembershipSource,
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

    return { forUser, forUsers, countByGroup, replace } as const
  })
}) {}
