import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const EnrolmentLinkRow = Schema.Struct({
  user_id: Schema.String,
  created_at: StoredTimestamp,
  expires_at: StoredTimestamp
})
export type EnrolmentLinkRow = typeof EnrolmentLinkRow.Type

const Redeemed = Schema.Array(Schema.Struct({ user_id: Schema.String }))

/**
 * Persistence of `enrolment_links` (docs/local-accounts.md): one live link per local account, stored
 * only as the SHA-256 hash of its token (the caller hashes). Redeeming is one conditional DELETE of an
 * unexpired row, which both SQLite and PostgreSQL apply atomically: of two concurrent redemptions of
 * one link exactly one gets the row (on PostgreSQL the second waits for the first to commit, then
 * matches nothing; SQLite serializes writers).
 */
export class EnrolmentLinkRepo extends Effect.Service<EnrolmentLinkRepo>()("gateway/EnrolmentLinkRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const byUser = SqlSchema.findOne({
      Request: Schema.String,
      Result: EnrolmentLinkRow,
      execute: (userId) => sql`SELECT user_id, created_at, expires_at FROM enrolment_links WHERE user_id = ${userId}`
    })
    const byUsers = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: EnrolmentLinkRow,
      execute: (ids) => sql`SELECT user_id, created_at, expires_at FROM enrolment_links WHERE ${sql.in("user_id", ids)}`
    })
    const byHash = SqlSchema.findOne({
      Request: Schema.Struct({ hash: Schema.String, now: Schema.String }),
      Result: EnrolmentLinkRow,
      execute: ({ hash, now }) =>
        sql`SELECT user_id, created_at, expires_at FROM enrolment_links
          WHERE token_hash = ${hash} AND expires_at > ${now}`
    })

    /** The account's live link, if any (its token is never readable: only when it was made). */
    const forUser = Effect.fn("EnrolmentLinkRepo.forUser")((userId: string) => byUser(userId).pipe(Effect.orDie))

    /** The links of these accounts (one page of a listing). */
    const forUsers = Effect.fn("EnrolmentLinkRepo.forUsers")((userIds: ReadonlyArray<string>) =>
      userIds.length === 0 ? Effect.succeed([]) : byUsers(userIds).pipe(Effect.orDie)
    )

    /** The unexpired link whose token hashes to `tokenHash`, without using it up (the page that shows the form). */
    const findLive = Effect.fn("EnrolmentLinkRepo.findLive")((tokenHash: string, now: Date) =>
      byHash({ hash: tokenHash, now: toStoredTimestamp(now) }).pipe(Effect.orDie)
    )

    /** Stores the account's new link; an older one is replaced (superseded) in the same statement. */
    const replace = Effect.fn("EnrolmentLinkRepo.replace")(function* (
      userId: string,
      tokenHash: string,
      at: Date,
      expiresAt: Date
    ) {
      const created = toStoredTimestamp(at)
      const expires = toStoredTimestamp(expiresAt)
      yield* sql`INSERT INTO enrolment_links ${sql.insert({
        user_id: userId,
        token_hash: tokenHash,
        created_at: created,
        expires_at: expires
      })} ON CONFLICT (user_id) DO UPDATE SET token_hash = ${tokenHash}, created_at = ${created},
        expires_at = ${expires}`.pipe(Effect.orDie)
    })

    /** Uses the link up: the account it was for, or undefined when it is unknown, expired or already used. */
    const redeem = Effect.fn("EnrolmentLinkRepo.redeem")(function* (tokenHash: string, now: Date) {
      const rows = yield* sql`DELETE FROM enrolment_links
        WHERE token_hash = ${tokenHash} AND expires_at > ${toStoredTimestamp(now)} RETURNING user_id`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Redeemed)),
        Effect.orDie
      )
      return rows[0]?.user_id
    })

    /** Kills the account's link (disabled, or the enrolment it was for is done). */
    const remove = Effect.fn("EnrolmentLinkRepo.remove")(function* (userId: string) {
      yield* sql`DELETE FROM enrolment_links WHERE user_id = ${userId}`.pipe(Effect.orDie)
    })

    return { forUser, forUsers, findLive, replace, redeem, remove } as const
  })
}) {}
