import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { toStoredTimestamp } from "./timestamp.js"

const SessionOf = Schema.Struct({ session_id: Schema.String })

/** The outcome of presenting a refresh token (by its hash) for rotation. */
export type Rotation =
  | { readonly _tag: "Rotated"; readonly sessionId: string }
  /** The token was consumed before: reuse (or the loser of a race); the caller revokes the session. */
  | { readonly _tag: "Reused"; readonly sessionId: string }
  | { readonly _tag: "Unknown" }

/**
 * Persistence of `refresh_tokens`. Only SHA-256 hashes are stored (docs/secrets.md); the
 * caller hashes. Rotation is decided by one conditional UPDATE, which both SQLite and
 * PostgreSQL apply atomically, so two concurrent uses of one token never both succeed.
 */
export class RefreshTokenRepo extends Effect.Service<RefreshTokenRepo>()("gateway/RefreshTokenRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const sessionOfToken = SqlSchema.findOne({
      Request: Schema.String,
      Result: SessionOf,
      execute: (hash) => sql`SELECT session_id FROM refresh_tokens WHERE token_hash = ${hash}`
    })

    const findSessionId = Effect.fn("RefreshTokenRepo.findSessionId")((tokenHash: string) =>
      sessionOfToken(tokenHash).pipe(Effect.orDie)
    )

    const insert = Effect.fn("RefreshTokenRepo.insert")(function* (tokenHash: string, sessionId: string, at: Date) {
      yield* sql`INSERT INTO refresh_tokens ${sql.insert({
        token_hash: tokenHash,
        session_id: sessionId,
        created_at: toStoredTimestamp(at)
      })}`.pipe(Effect.orDie)
    })

    /**
     * Consumes `oldHash` and stores `newHash` in its place, in one transaction. The UPDATE only matches
     * an unconsumed token; on PostgreSQL a concurrent second UPDATE waits for the first to commit and
     * then matches nothing, on SQLite writers are serialized: either way exactly one caller rotates.
     */
    const rotate = Effect.fn("RefreshTokenRepo.rotate")(function* (oldHash: string, newHash: string, at: Date) {
      const stamp = toStoredTimestamp(at)
      const attempt = Effect.gen(function* () {
        const won = yield* sql`UPDATE refresh_tokens SET consumed_at = ${stamp}
          WHERE token_hash = ${oldHash} AND consumed_at IS NULL RETURNING session_id`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(SessionOf)))
        )
        const first = won[0]
        if (first === undefined) return undefined
        yield* sql`INSERT INTO refresh_tokens ${sql.insert({
          token_hash: newHash,
          session_id: first.session_id,
          created_at: stamp
        })}`
        return first.session_id
      })
      const rotated = yield* sql.withTransaction(attempt).pipe(Effect.orDie)
      if (rotated !== undefined) return { _tag: "Rotated", sessionId: rotated } satisfies Rotation as Rotation
      const existing = yield* findSessionId(oldHash)
      return existing._tag === "Some"
        ? ({ _tag: "Reused", sessionId: existing.value.session_id } satisfies Rotation as Rotation)
        : ({ _tag: "Unknown" } satisfies Rotation as Rotation)
    })

    return { findSessionId, insert, rotate } as const
  })
}) {}
