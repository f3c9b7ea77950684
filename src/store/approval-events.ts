import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { sha256Hex } from "../crypto/hashing.js"
import type { ApprovalRow } from "./approvals.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/**
 * What happened to an approval (docs/approvals.md, "Events"): the closed list the outbox, the webhook's
 * `action` and the audit archive share. One per change of state, plus `reminder`.
 */
export const ApprovalAction = Schema.Literal(
  "requested",
  "vote",
  "approved",
  "rejected",
  "revoked",
  "executed",
  "outcome_unknown",
  "expired",
  "votes_withdrawn",
  "reminder"
)
export type ApprovalAction = typeof ApprovalAction.Type

/** How a person acted, as evidence: never a token, a code or a secret. */
export interface ApprovalEvidence {
  /** How the actor's account signs in: `local`, `builtin_admin` or `enterprise`. */
  readonly sign_in?: string
  /** The `acr` of the reviewer's step-up, on a vote that needed one. */
  readonly acr?: string | null
}

/** What the service knows of a change beyond the approval row itself. */
export interface EventFacts {
  readonly action: ApprovalAction
  /** The internal user id of who acted; null when the gateway itself did (expiry, a restart, a reminder). */
  readonly actor: string | null
  readonly reason?: string | null
  readonly evidence?: ApprovalEvidence
}

const StoredSeq = Schema.Union(Schema.Int, Schema.NumberFromString.pipe(Schema.int()))

export const ApprovalEventRow = Schema.Struct({
  seq: StoredSeq,
  event_id: Schema.String,
  approval_id: Schema.String,
  action: ApprovalAction,
  actor: Schema.NullOr(Schema.String),
  occurred_at: StoredTimestamp,
  expires_at: StoredTimestamp,
  reason: Schema.NullOr(Schema.String),
  evidence: Schema.parseJson(
    Schema.Struct({ sign_in: Schema.optional(Schema.String), acr: Schema.optional(Schema.NullOr(Schema.String)) })
  ),
  intent_hash: Schema.NullOr(Schema.String),
  result_hash: Schema.NullOr(Schema.String)
})
export type ApprovalEventRow = typeof ApprovalEventRow.Type

/**
 * The deadline an event carries: the execution deadline once the approval was approved, otherwise
 * the request's expiry.
 */
export const deadlineOf = (row: ApprovalRow): Date =>
  row.execute_by !== null && row.state !== "pending" ? row.execute_by : row.expires_at

/** The row to insert for `facts` about `row` (as it is after the change), at `at`. */
const eventRecord = (row: ApprovalRow, facts: EventFacts, at: Date) => ({
  event_id: randomUUID(),
  approval_id: row.id,
  action: facts.action,
  actor: facts.actor,
  occurred_at: toStoredTimestamp(at),
  expires_at: toStoredTimestamp(deadlineOf(row)),
  reason: facts.reason ?? null,
  evidence: JSON.stringify(facts.evidence ?? {}),
  // The sealed text as stored: binds exactly what the database holds, and reveals nothing of it.
  intent_hash: row.intent_sealed === null ? null : sha256Hex(row.intent_sealed),
  result_hash: row.result_sealed === null ? null : sha256Hex(row.result_sealed)
})

const Counter = Schema.Array(Schema.Struct({ seq: StoredSeq }))

/**
 * Appends one event per `(row, facts)` to the outbox. Call it inside the transaction of the change:
 * the counter row's UPDATE takes its lock (PostgreSQL; SQLite has one writer) until that transaction
 * ends, so `seq` values commit in the order they were taken, and a rollback returns them.
 */
export const appendApprovalEvents = (
  sql: SqlClient.SqlClient,
  changes: ReadonlyArray<{ readonly row: ApprovalRow; readonly facts: EventFacts }>,
  at: Date
) =>
  Effect.gen(function* () {
    if (changes.length === 0) return
    const counter = yield* sql`UPDATE approval_event_counter SET seq = seq + ${changes.length} WHERE id = 1
      RETURNING seq`.pipe(Effect.flatMap(Schema.decodeUnknown(Counter)))
    const last = counter[0]?.seq
    if (last === undefined) return yield* Effect.dieMessage("the approval event counter row is missing")
    const first = last - changes.length + 1
    yield* sql`INSERT INTO approval_events ${sql.insert(
      changes.map(({ row, facts }, index) => ({ seq: first + index, ...eventRecord(row, facts, at) }))
    )}`
  })

/**
 * Reads of the approval outbox (`approval_events`), for the notifier and the archive: always by `seq`,
 * the primary key, so a read costs the rows it returns however long the outbox is.
 */
export class ApprovalEventRepo extends Effect.Service<ApprovalEventRepo>()("gateway/ApprovalEventRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const decodeRows = Schema.decodeUnknown(Schema.Array(ApprovalEventRow))

    /** Up to `limit` events after `seq`, in order. */
    const after = Effect.fn("ApprovalEventRepo.after")(function* (seq: number, limit: number) {
      return yield* sql`SELECT * FROM approval_events WHERE seq > ${seq} ORDER BY seq LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.orDie
      )
    })

    /** The highest `seq` committed so far (0 when there is none). */
    const latest = Effect.fn("ApprovalEventRepo.latest")(function* () {
      const rows = yield* sql`SELECT seq FROM approval_event_counter WHERE id = 1`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Counter)),
        Effect.orDie
      )
      return rows[0]?.seq ?? 0
    })

    /** The events of one approval, in order. */
    const ofApproval = Effect.fn("ApprovalEventRepo.ofApproval")(function* (approvalId: string) {
      return yield* sql`SELECT * FROM approval_events WHERE approval_id = ${approvalId} ORDER BY seq`.pipe(
        Effect.flatMap(decodeRows),
        Effect.orDie
      )
    })

    return { after, latest, ofApproval } as const
  })
}) {}
