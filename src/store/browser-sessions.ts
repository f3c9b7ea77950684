import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const BrowserSessionRow = Schema.Struct({
  id: Schema.String,
  token_hash: Schema.String,
  user_id: Schema.String,
  auth_time: StoredTimestamp,
  expires_at: StoredTimestamp,
  revoked_at: Schema.NullOr(StoredTimestamp)
})
export type BrowserSessionRow = typeof BrowserSessionRow.Type

export interface NewBrowserSession {
  readonly id: string
  readonly tokenHash: string
  readonly userId: string
  readonly authTime: Date
  readonly expiresAt: Date
}

/** Persistence of `browser_sessions`: sign-ins at /sso, found by the SHA-256 of the cookie's token. */
export class BrowserSessionRepo extends Effect.Service<BrowserSessionRepo>()("gateway/BrowserSessionRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const byTokenHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: BrowserSessionRow,
      execute: (hash) => sql`SELECT * FROM browser_sessions WHERE token_hash = ${hash}`
    })

    const findByTokenHash = Effect.fn("BrowserSessionRepo.findByTokenHash")((tokenHash: string) =>
      byTokenHash(tokenHash).pipe(Effect.orDie)
    )

    const insert = Effect.fn("BrowserSessionRepo.insert")(function* (session: NewBrowserSession) {
      yield* sql`INSERT INTO browser_sessions ${sql.insert({
        id: session.id,
        token_hash: session.tokenHash,
        user_id: session.userId,
        auth_time: toStoredTimestamp(session.authTime),
        expires_at: toStoredTimestamp(session.expiresAt)
      })}`.pipe(Effect.orDie)
    })

    const revokeForUser = Effect.fn("BrowserSessionRepo.revokeForUser")(function* (userId: string, at: Date) {
      yield* sql`UPDATE browser_sessions SET revoked_at = ${toStoredTimestamp(at)}
        WHERE user_id = ${userId} AND revoked_at IS NULL`.pipe(Effect.orDie)
    })

    const deleteEndedBefore = Effect.fn("BrowserSessionRepo.deleteEndedBefore")(function* (before: Date) {
      const cutoff = toStoredTimestamp(before)
      yield* sql`DELETE FROM browser_sessions WHERE expires_at < ${cutoff} OR revoked_at < ${cutoff}`.pipe(Effect.orDie)
    })

    return { findByTokenHash, insert, revokeForUser, deleteEndedBefore } as const
  })
}) {}
