import { randomUUID } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { SourceKind } from "../sources/schema.js"
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

export interface NewAuditEvent {
  readonly at: Date
  readonly actorId: string | undefined
  readonly action: string
  readonly targetKind: "user" | "group" | "identity_providers" | "directory" | SourceKind | "source_proposal"
  readonly targetId: string
  readonly detail: Record<string, unknown>
  readonly requestId: string | undefined
}

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
      const id = randomUUID()
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

    return { insert, forTarget } as const
  })
}) {}
