import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { SourceKind } from "../sources/schema.js"
import { orderedId } from "./ordered-id.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const AuditEventRow = Schema.Struct({
  id: Schema.String,
  at: StoredTimestamp,
  actor_id: Schema.NullOr(Schema.String),
  action: Schema.String,
  target_kind: Schema.String,
  target_id: Schema.String,
  /** JSON: what changed (docs/management-api.md, "Audit events"); never a secret. */
  detail: Schema.String,
  request_id: Schema.NullOr(Schema.String)
})
export type AuditEventRow = typeof AuditEventRow.Type

/** An event as the audit trail lists it: with who acted, by name when they are a user still. */
export const AuditEventListed = Schema.Struct({ ...AuditEventRow.fields, actor_name: Schema.NullOr(Schema.String) })
export type AuditEventListed = typeof AuditEventListed.Type

export interface AuditPageQuery {
  readonly actorId?: string | undefined
  readonly targetId?: string | undefined
  readonly limit: number
  readonly before?: { readonly at: Date; readonly id: string } | undefined
}

export interface NewAuditEvent {
  readonly at: Date
  readonly actorId: string | undefined
  readonly action: string
  readonly targetKind: "user" | "group" | "identity_providers" | "directory" | SourceKind | "source_proposal"
  readonly targetId: string
  readonly detail: Record<string, unknown>
  readonly requestId: string | undefined
}

/**
 * Newest first by (at, id), `limit` of them, of one actor and/or one target when given; `before`: the
 * page after this event. Each filter reads its own index (migration 0022) as a range — a row-value
 * comparison, which both stores use as the index's range (an OR would be a filter). Exported so the
 * store tests can read its query plan.
 */
export const auditPageStatement = (sql: SqlClient.SqlClient, query: AuditPageQuery) => {
  const conditions = [
    ...(query.actorId === undefined ? [] : [sql`e.actor_id = ${query.actorId}`]),
    ...(query.targetId === undefined ? [] : [sql`e.target_id = ${query.targetId}`]),
    ...(query.before === undefined
      ? []
      : [sql`(e.at, e.id) < (${toStoredTimestamp(query.before.at)}, ${query.before.id})`])
  ]
  const where = conditions.length === 0 ? sql`` : sql`WHERE ${sql.and(conditions)}`
  return sql`SELECT e.*, u.display_name AS actor_name FROM audit_events e
    LEFT JOIN users u ON u.id = e.actor_id ${where}
    ORDER BY e.at DESC, e.id DESC LIMIT ${query.limit}`
}

/**
 * The audit actions that hand a local account new credentials through a one-time enrolment link
 * (docs/local-accounts.md): whoever did the latest of them held that link, so may hold the account.
 */
export const CREDENTIAL_ISSUING_ACTIONS = [
  "identity.local_account_created",
  "identity.local_account_password_reset",
  "identity.local_account_mfa_reset"
] as const

/** Persistence of `audit_events`: written in the same transaction as the change it records. */
export class AuditEventRepo extends Effect.Service<AuditEventRepo>()("gateway/AuditEventRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const byTarget = SqlSchema.findAll({
      Request: Schema.String,
      Result: AuditEventRow,
      execute: (targetId) => sql`SELECT * FROM audit_events WHERE target_id = ${targetId} ORDER BY at, id`
    })

    const insert = Effect.fn("AuditEventRepo.insert")(function* (event: NewAuditEvent) {
      const id = orderedId()
      yield* sql`INSERT INTO audit_events ${sql.insert({
        id,
        at: toStoredTimestamp(event.at),
        actor_id: event.actorId ?? null,
        action: event.action,
        target_kind: event.targetKind,
        target_id: event.targetId,
        detail: JSON.stringify(event.detail),
        request_id: event.requestId ?? null
      })}`.pipe(Effect.orDie)
      return id
    })

    const forTarget = Effect.fn("AuditEventRepo.forTarget")((targetId: string) => byTarget(targetId).pipe(Effect.orDie))

    /** One page of the audit trail (`auditPageStatement`), each event with its actor's display name. */
    const page = Effect.fn("AuditEventRepo.page")(function* (query: AuditPageQuery) {
      const rows = yield* auditPageStatement(sql, query).pipe(Effect.orDie)
      return yield* Schema.decodeUnknown(Schema.Array(AuditEventListed))(rows).pipe(Effect.orDie)
    })

    const latestIssuer = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ actor_id: Schema.NullOr(Schema.String) }),
      execute: (userId) =>
        sql`SELECT actor_id FROM audit_events WHERE target_id = ${userId}
          AND ${sql.in("action", CREDENTIAL_ISSUING_ACTIONS)} ORDER BY at DESC, id DESC LIMIT 1`
    })

    /**
     * Who handed `userId` their current credentials (the actor of the latest of
     * `CREDENTIAL_ISSUING_ACTIONS`), if anyone did: undefined for people who never had an enrolment
     * link (enterprise identities, the built-in administrator, accounts made by the gateway itself).
     * One range of the `(target_id, at, id)` index.
     */
    const credentialsIssuer = Effect.fn("AuditEventRepo.credentialsIssuer")(function* (userId: string) {
      const rows = yield* latestIssuer(userId).pipe(Effect.orDie)
      return rows[0]?.actor_id ?? undefined
    })

    return { insert, forTarget, page, credentialsIssuer } as const
  })
}) {}
