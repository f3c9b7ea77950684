import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { securityEvent } from "../events/security-log.js"
import { SessionCache } from "./session-cache.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const SessionRow = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  client_id: Schema.String,
  scope: Schema.String,
  resource: Schema.String,
  auth_time: StoredTimestamp,
  created_at: StoredTimestamp,
  expires_at: StoredTimestamp,
  revoked_at: Schema.NullOr(StoredTimestamp),
  revoked_reason: Schema.NullOr(Schema.String)
})
export type SessionRow = typeof SessionRow.Type

export interface NewSession {
  readonly id: string
  readonly userId: string
  readonly clientId: string
  readonly scope: string
  readonly resource: string
  readonly authTime: Date
  readonly createdAt: Date
  readonly expiresAt: Date
}

/** Why a session ended early; kept for operators reading the table. */
export type RevokeReason =
  | "refresh_token_reuse"
  | "authorization_code_replay"
  | "grant_revoked"
  | "administrator_reset"
  | "user_disabled"
  /** An administrator reset a local account's password or second factor (docs/local-accounts.md). */
  | "credentials_reset"
  | "identity_provider_replaced"
  | "signed_out"

const RevokedList = Schema.Array(Schema.Struct({ id: Schema.String, user_id: Schema.String, client_id: Schema.String }))

/**
 * Persistence of `sessions`, the token sessions access tokens name as `sid`. Every revocation
 * invalidates the session cache, so /mcp denies the very next request.
 */
export class SessionRepo extends Effect.Service<SessionRepo>()("gateway/SessionRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* SessionCache

    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: SessionRow,
      execute: (id) => sql`SELECT * FROM sessions WHERE id = ${id}`
    })

    const find = Effect.fn("SessionRepo.find")((id: string) => byId(id).pipe(Effect.orDie))

    const insert = Effect.fn("SessionRepo.insert")(function* (session: NewSession) {
      yield* sql`INSERT INTO sessions ${sql.insert({
        id: session.id,
        user_id: session.userId,
        client_id: session.clientId,
        scope: session.scope,
        resource: session.resource,
        auth_time: toStoredTimestamp(session.authTime),
        created_at: toStoredTimestamp(session.createdAt),
        expires_at: toStoredTimestamp(session.expiresAt)
      })}`.pipe(Effect.orDie)
    })

    // Every revocation passes here, so this is where its security line is written (docs/operations.md):
    // one per call, naming the sessions (their ids identify, they grant nothing) — never a token.
    const revokeWhere = (where: ReturnType<typeof sql.and>, reason: RevokeReason, at: Date) =>
      sql`UPDATE sessions SET revoked_at = ${toStoredTimestamp(at)}, revoked_reason = ${reason}
        WHERE ${where} AND revoked_at IS NULL RETURNING id, user_id, client_id`.pipe(
        Effect.flatMap(Schema.decodeUnknown(RevokedList)),
        Effect.orDie,
        Effect.tap((rows) => cache.forgetSessions(rows.map((row) => row.id))),
        Effect.tap((rows) =>
          rows.length === 0
            ? Effect.void
            : securityEvent("auth.session_revoked", {
                reason,
                user_id: [...new Set(rows.map((row) => row.user_id))].join(" "),
                client_id: [...new Set(rows.map((row) => row.client_id))].join(" "),
                sessions: rows.map((row) => row.id)
              })
        ),
        Effect.map((rows) => rows.length)
      )

    /** Revokes one session; the number revoked (0 when it was already revoked or unknown). */
    const revoke = Effect.fn("SessionRepo.revoke")((id: string, reason: RevokeReason, at: Date) =>
      revokeWhere(sql.and([sql`id = ${id}`]), reason, at)
    )

    const revokeForUserClient = Effect.fn("SessionRepo.revokeForUserClient")(
      (userId: string, clientId: string, reason: RevokeReason, at: Date) =>
        revokeWhere(sql.and([sql`user_id = ${userId}`, sql`client_id = ${clientId}`]), reason, at)
    )

    const revokeForUser = Effect.fn("SessionRepo.revokeForUser")((userId: string, reason: RevokeReason, at: Date) =>
      revokeWhere(sql.and([sql`user_id = ${userId}`]), reason, at)
    )

    /** Deletes sessions (and, by cascade, their refresh tokens) that ended before `before`. */
    const deleteEndedBefore = Effect.fn("SessionRepo.deleteEndedBefore")(function* (before: Date) {
      const cutoff = toStoredTimestamp(before)
      yield* sql`DELETE FROM sessions WHERE expires_at < ${cutoff} OR revoked_at < ${cutoff}`.pipe(Effect.orDie)
    })

    return { find, insert, revoke, revokeForUserClient, revokeForUser, deleteEndedBefore } as const
  }),
  dependencies: [SessionCache.Default]
}) {}
