import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import { type ApprovalAction, type ApprovalEvidence, appendApprovalEvents, type EventFacts } from "./approval-events.js"
import { StoredBoolean, toStoredBoolean } from "./columns.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/** Where a write approval stands (docs/approvals.md, "States"). `executing` is the claim of one resume. */
export const ApprovalState = Schema.Literal(
  "pending",
  "approved",
  "executing",
  "completed",
  "rejected",
  "revoked",
  "expired",
  "unknown"
)
export type ApprovalState = typeof ApprovalState.Type

/** States from which nothing more happens: the operation id is spent. */
export type FinishedState = Extract<ApprovalState, "completed" | "rejected" | "revoked" | "expired" | "unknown">
export const finishedStates: ReadonlyArray<FinishedState> = ["completed", "rejected", "revoked", "expired", "unknown"]
/** States that count towards the 20 active approvals of one requester. */
export const activeStates: ReadonlyArray<ApprovalState> = ["pending", "approved", "executing"]

export const ApprovalRow = Schema.Struct({
  id: Schema.String,
  operation_key: Schema.NullOr(Schema.String),
  issuer: Schema.String,
  subject: Schema.String,
  /** The gateway's user id of who asked (null: not known, then nobody may approve it). */
  requester_id: Schema.NullOr(Schema.String),
  client_id: Schema.NullOr(Schema.String),
  backend: Schema.String,
  tool: Schema.String,
  exposed_name: Schema.String,
  source_hash: Schema.String,
  intent_sealed: Schema.NullOr(Schema.String),
  intent_hash: Schema.String,
  required_approvals: Schema.Literal(1, 2),
  require_step_up: StoredBoolean,
  approvers: Schema.parseJson(Schema.Array(Schema.String)),
  risk: Schema.String,
  state: ApprovalState,
  created_at: StoredTimestamp,
  expires_at: StoredTimestamp,
  approved_at: Schema.NullOr(StoredTimestamp),
  execute_by: Schema.NullOr(StoredTimestamp),
  finished_at: Schema.NullOr(StoredTimestamp),
  decided_by: Schema.NullOr(Schema.String),
  result_sealed: Schema.NullOr(Schema.String),
  revision: Schema.Int
})
export type ApprovalRow = typeof ApprovalRow.Type

export const VoteRow = Schema.Struct({
  approval_id: Schema.String,
  reviewer_id: Schema.String,
  reviewer_name: Schema.String,
  step_up_acr: Schema.NullOr(Schema.String),
  step_up_at: Schema.NullOr(StoredTimestamp),
  voted_at: StoredTimestamp
})
export type VoteRow = typeof VoteRow.Type

/** A new approval as the service builds it (state `pending`). */
export interface NewApproval {
  readonly id: string
  readonly operationKey: string | undefined
  readonly issuer: string
  readonly subject: string
  /** The gateway's user id of who asked: reviewers are told from the requester by it alone. */
  readonly requesterId: string
  readonly clientId: string | undefined
  readonly backend: string
  readonly tool: string
  readonly exposedName: string
  readonly sourceHash: string
  readonly intentSealed: string
  readonly intentHash: string
  readonly requiredApprovals: 1 | 2
  readonly requireStepUp: boolean
  readonly approvers: ReadonlyArray<string>
  readonly risk: string
  readonly createdAt: Date
  readonly expiresAt: Date
}

export type Created =
  | { readonly _tag: "Created"; readonly row: ApprovalRow }
  /** The operation key names an approval already (a retry, or a conflict the service tells apart). */
  | { readonly _tag: "Existing"; readonly row: ApprovalRow }
  /** The operation key was used by an approval retention has dropped: the id is spent. */
  | { readonly _tag: "Spent"; readonly state: string }
  | { readonly _tag: "TooMany"; readonly active: number }

export interface NewVote {
  readonly reviewerId: string
  readonly reviewerName: string
  readonly stepUpAcr: string | undefined
  readonly stepUpAt: Date | undefined
}

export type Voted =
  | { readonly _tag: "Voted"; readonly row: ApprovalRow }
  | { readonly _tag: "AlreadyVoted"; readonly row: ApprovalRow }
  /** Not pending (or past its expiry): nothing was recorded. */
  | { readonly _tag: "NotPending"; readonly row: ApprovalRow | undefined }

/** What `finish` records beside the state: who decided, the sealed result, and the event's details. */
export interface FinishFields {
  readonly decidedBy?: string
  readonly resultSealed?: string
  /** Who acted, when not the decider (the requester's resume); the gateway itself when neither is given. */
  readonly actor?: string
  readonly reason?: string
  readonly evidence?: ApprovalEvidence
}

/** The outbox action of each state `finish` may move an approval to. */
const finishAction: Readonly<Record<FinishedState, ApprovalAction>> = {
  completed: "executed",
  rejected: "rejected",
  revoked: "revoked",
  expired: "expired",
  unknown: "outcome_unknown"
}

const Count = Schema.Struct({ n: Schema.Int })
const Purged = Schema.Struct({
  id: Schema.String,
  operation_key: Schema.NullOr(Schema.String),
  state: Schema.String,
  finished_at: Schema.NullOr(StoredTimestamp)
})

/** Every column but the sealed ones (`intent_sealed`, `result_sealed`). */
const LIST_COLUMNS = [
  "id",
  "operation_key",
  "issuer",
  "subject",
  "requester_id",
  "client_id",
  "backend",
  "tool",
  "exposed_name",
  "source_hash",
  "intent_hash",
  "required_approvals",
  "require_step_up",
  "approvers",
  "risk",
  "state",
  "created_at",
  "expires_at",
  "approved_at",
  "execute_by",
  "finished_at",
  "decided_by",
  "revision"
].join(", ")
const Tombstone = Schema.Struct({ state: Schema.String })

/** The stored row of a new approval, pending at revision 1: what `ApprovalRepo.create` inserts. */
export const pendingApprovalRow = (approval: NewApproval) => ({
  id: approval.id,
  operation_key: approval.operationKey ?? null,
  issuer: approval.issuer,
  subject: approval.subject,
  requester_id: approval.requesterId,
  client_id: approval.clientId ?? null,
  backend: approval.backend,
  tool: approval.tool,
  exposed_name: approval.exposedName,
  source_hash: approval.sourceHash,
  intent_sealed: approval.intentSealed,
  intent_hash: approval.intentHash,
  required_approvals: approval.requiredApprovals,
  require_step_up: toStoredBoolean(approval.requireStepUp),
  approvers: JSON.stringify(approval.approvers),
  risk: approval.risk,
  state: "pending",
  created_at: toStoredTimestamp(approval.createdAt),
  expires_at: toStoredTimestamp(approval.expiresAt),
  revision: 1
})

/**
 * Persistence of write approvals (`approvals`, `approval_votes`, `approval_tombstones`). Every change of
 * state is one conditional UPDATE on the state it expects, which SQLite and PostgreSQL both apply
 * atomically: of two reviewers deciding at once, or two resumes, exactly one wins. Creation holds a
 * per-requester lock (PostgreSQL advisory; SQLite serializes writers), so the active-approval limit
 * and the operation id's uniqueness cannot be raced past. Each change that the approval's people hear
 * about appends its event to the outbox (`approval_events`) in the same transaction: a change that
 * rolls back leaves no event, and one that commits has it.
 */
export class ApprovalRepo extends Effect.Service<ApprovalRepo>()("gateway/ApprovalRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const decodeRows = Schema.decodeUnknown(Schema.Array(ApprovalRow))
    const one = (rows: ReadonlyArray<ApprovalRow>) => Option.fromNullable(rows[0])

    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: ApprovalRow,
      execute: (id) => sql`SELECT * FROM approvals WHERE id = ${id}`
    })
    const byKey = SqlSchema.findOne({
      Request: Schema.String,
      Result: ApprovalRow,
      execute: (key) => sql`SELECT * FROM approvals WHERE operation_key = ${key}`
    })
    const tombstone = SqlSchema.findOne({
      Request: Schema.String,
      Result: Tombstone,
      execute: (key) => sql`SELECT state FROM approval_tombstones WHERE operation_key = ${key}`
    })
    const votesOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: VoteRow,
      execute: (id) => sql`SELECT * FROM approval_votes WHERE approval_id = ${id} ORDER BY voted_at, reviewer_id`
    })

    const countOf = (rows: ReadonlyArray<unknown>) =>
      Schema.decodeUnknown(Schema.Array(Count))(rows).pipe(Effect.map((decoded) => decoded[0]?.n ?? 0))

    const findById = Effect.fn("ApprovalRepo.findById")((id: string) => byId(id).pipe(Effect.orDie))
    const votes = Effect.fn("ApprovalRepo.votes")((id: string) => votesOf(id).pipe(Effect.orDie))

    /**
     * The requester's lock for the length of the transaction (PostgreSQL; SQLite has one writer). The
     * name is JSON (unambiguous, and free of NUL, which a PostgreSQL text parameter cannot carry).
     */
    const lockRequester = (issuer: string, subject: string) =>
      sql.onDialectOrElse({
        pg: () =>
          sql`SELECT pg_advisory_xact_lock(hashtext(${JSON.stringify(["approvals", issuer, subject])}))`.pipe(
            Effect.asVoid
          ),
        orElse: () => Effect.void
      })

    /**
     * Creates the approval unless its operation key is known (→ Existing or Spent) or the requester
     * has `limit` active approvals (→ TooMany); one transaction under the requester's lock.
     */
    const create = Effect.fn("ApprovalRepo.create")(function* (approval: NewApproval, limit: number) {
      const attempt = Effect.gen(function* () {
        yield* lockRequester(approval.issuer, approval.subject)
        const key = approval.operationKey
        if (key !== undefined) {
          const existing = yield* byKey(key)
          if (Option.isSome(existing)) return { _tag: "Existing", row: existing.value } satisfies Created as Created
          const spent = yield* tombstone(key)
          if (Option.isSome(spent)) return { _tag: "Spent", state: spent.value.state } satisfies Created as Created
        }
        const active = yield* countOf(
          yield* sql`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM approvals WHERE issuer = ${approval.issuer}
            AND subject = ${approval.subject} AND state IN ${sql.in(activeStates)}`
        )
        if (active >= limit) return { _tag: "TooMany", active } satisfies Created as Created
        const rows = yield* sql`INSERT INTO approvals ${sql.insert(pendingApprovalRow(approval))} RETURNING *`.pipe(
          Effect.flatMap(decodeRows)
        )
        const requested: EventFacts = { action: "requested", actor: approval.requesterId }
        yield* appendApprovalEvents(sql, [{ row: rows[0]!, facts: requested }], approval.createdAt)
        return { _tag: "Created", row: rows[0]! } satisfies Created as Created
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /**
     * Records a reviewer's approval of a pending request and, when the votes reach its quorum, approves
     * it and starts its execution deadline (`executeBy`). The first UPDATE locks the row (PostgreSQL), so
     * two reviewers voting at once are counted one after the other.
     */
    const vote = Effect.fn("ApprovalRepo.vote")(function* (
      id: string,
      voter: NewVote,
      now: Date,
      executeBy: Date,
      facts: Pick<EventFacts, "evidence"> = {}
    ) {
      const voted: EventFacts = { action: "vote", actor: voter.reviewerId, ...facts }
      const stamp = toStoredTimestamp(now)
      const attempt = Effect.gen(function* () {
        const locked = yield* sql`UPDATE approvals SET revision = revision + 1
          WHERE id = ${id} AND state = 'pending' AND expires_at > ${stamp} RETURNING *`.pipe(Effect.flatMap(decodeRows))
        const row = locked[0]
        if (row === undefined) return { _tag: "NotPending", row: Option.getOrUndefined(yield* byId(id)) } as Voted
        const inserted = yield* sql`INSERT INTO approval_votes ${sql.insert({
          approval_id: id,
          reviewer_id: voter.reviewerId,
          reviewer_name: voter.reviewerName,
          step_up_acr: voter.stepUpAcr ?? null,
          step_up_at: voter.stepUpAt === undefined ? null : toStoredTimestamp(voter.stepUpAt),
          voted_at: stamp
        })} ON CONFLICT (approval_id, reviewer_id) DO NOTHING RETURNING reviewer_id`
        if (inserted.length === 0) return { _tag: "AlreadyVoted", row } as Voted
        const count = yield* countOf(
          yield* sql`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM approval_votes WHERE approval_id = ${id}`
        )
        if (count < row.required_approvals) {
          yield* appendApprovalEvents(sql, [{ row, facts: voted }], now)
          return { _tag: "Voted", row } as Voted
        }
        const approved = yield* sql`UPDATE approvals SET state = 'approved', approved_at = ${stamp},
          execute_by = ${toStoredTimestamp(executeBy)}, revision = revision + 1
          WHERE id = ${id} AND state = 'pending' RETURNING *`.pipe(Effect.flatMap(decodeRows))
        const after = approved[0] ?? row
        yield* appendApprovalEvents(
          sql,
          [
            { row: after, facts: voted },
            { row: after, facts: { action: "approved", actor: voter.reviewerId, ...facts } }
          ],
          now
        )
        return { _tag: "Voted", row: after } as Voted
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /**
     * Moves the approval from one of `from` to `to` (a finished state), recording who decided; the
     * updated row, or none when it was no longer in `from`.
     */
    const finish = Effect.fn("ApprovalRepo.finish")(function* (
      id: string,
      from: ReadonlyArray<ApprovalState>,
      to: FinishedState,
      now: Date,
      fields: FinishFields = {}
    ) {
      const facts: EventFacts = {
        action: finishAction[to],
        actor: fields.actor ?? fields.decidedBy ?? null,
        reason: fields.reason ?? null,
        evidence: fields.evidence ?? {}
      }
      const attempt = Effect.gen(function* () {
        const rows = yield* sql`UPDATE approvals SET state = ${to}, finished_at = ${toStoredTimestamp(now)},
          decided_by = ${fields.decidedBy ?? null}, result_sealed = ${fields.resultSealed ?? null},
          revision = revision + 1
          WHERE id = ${id} AND state IN ${sql.in(from)} RETURNING *`.pipe(Effect.flatMap(decodeRows))
        yield* appendApprovalEvents(
          sql,
          rows.map((row) => ({ row, facts })),
          now
        )
        return one(rows)
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /** The one resume that may execute: approved, within its deadline → executing. */
    const claim = Effect.fn("ApprovalRepo.claim")(function* (id: string, now: Date) {
      const rows = yield* sql`UPDATE approvals SET state = 'executing', revision = revision + 1
        WHERE id = ${id} AND state = 'approved' AND execute_by > ${toStoredTimestamp(now)}
        RETURNING *`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return one(rows)
    })

    /** A claimed execution that provably never reached the backend is approved again. */
    const release = Effect.fn("ApprovalRepo.release")(function* (id: string) {
      yield* sql`UPDATE approvals SET state = 'approved', revision = revision + 1
        WHERE id = ${id} AND state = 'executing'`.pipe(Effect.orDie)
    })

    /** Pending past their expiry and approved past their execution deadline → expired; the rows changed. */
    const expireDue = Effect.fn("ApprovalRepo.expireDue")(function* (now: Date) {
      const stamp = toStoredTimestamp(now)
      const attempt = Effect.gen(function* () {
        const rows = yield* sql`UPDATE approvals SET state = 'expired', finished_at = ${stamp}, revision = revision + 1
          WHERE (state = 'pending' AND expires_at <= ${stamp}) OR (state = 'approved' AND execute_by <= ${stamp})
          RETURNING *`.pipe(Effect.flatMap(decodeRows))
        yield* appendApprovalEvents(
          sql,
          rows.map((row) => ({ row, facts: { action: "expired", actor: null } satisfies EventFacts })),
          now
        )
        return rows
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /** After a restart: an execution that was running has an unclear outcome → unknown (never replayed). */
    const interrupted = Effect.fn("ApprovalRepo.interrupted")(function* (now: Date) {
      const attempt = Effect.gen(function* () {
        const rows = yield* sql`UPDATE approvals SET state = 'unknown', finished_at = ${toStoredTimestamp(now)},
          revision = revision + 1 WHERE state = 'executing' RETURNING *`.pipe(Effect.flatMap(decodeRows))
        yield* appendApprovalEvents(
          sql,
          rows.map((row) => ({
            row,
            facts: { action: "outcome_unknown", actor: null, reason: "restart" } satisfies EventFacts
          })),
          now
        )
        return rows
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /**
     * The reminders due at `now`: every pending approval whose expiry, and every approved one whose
     * execution deadline, falls within `windowMs`, and that has had no reminder of that deadline yet,
     * gets one `reminder` event (at most `batch` per call); how many were written. On PostgreSQL the
     * rows are locked first, so a decision committing meanwhile is seen before a reminder is written.
     */
    const remind = Effect.fn("ApprovalRepo.remind")(function* (now: Date, windowMs: number, batch: number) {
      const stamp = toStoredTimestamp(now)
      const until = toStoredTimestamp(new Date(now.getTime() + windowMs))
      const lock = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE OF approvals`, orElse: () => sql`` })
      const attempt = Effect.gen(function* () {
        const rows = yield* sql`SELECT * FROM approvals WHERE
          ((state = 'pending' AND expires_at > ${stamp} AND expires_at <= ${until})
            OR (state = 'approved' AND execute_by > ${stamp} AND execute_by <= ${until}))
          AND NOT EXISTS (SELECT 1 FROM approval_events e WHERE e.approval_id = approvals.id
            AND e.action = 'reminder'
            AND e.expires_at = CASE WHEN approvals.state = 'approved' THEN approvals.execute_by ELSE approvals.expires_at END)
          ORDER BY id LIMIT ${batch} ${lock}`.pipe(Effect.flatMap(decodeRows))
        yield* appendApprovalEvents(
          sql,
          rows.map((row) => ({ row, facts: { action: "reminder", actor: null } satisfies EventFacts })),
          now
        )
        return rows.length
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /**
     * Open approvals (pending and approved) oldest first by (created_at, id), `limit` of them; `after`:
     * the page after this row. A range of the `approvals_open` index. `created_at` is always written
     * from a JS Date (milliseconds), so a cursor read back from a row matches it exactly.
     */
    const listOpen = Effect.fn("ApprovalRepo.listOpen")(function* (
      limit: number,
      after?: { readonly createdAt: Date; readonly id: string }
    ) {
      // A row-value comparison, which both stores use as the index's range (an OR would be a filter).
      const from =
        after === undefined ? sql`` : sql`AND (created_at, id) > (${toStoredTimestamp(after.createdAt)}, ${after.id})`
      // SQLite keeps no statistics here (nothing runs ANALYZE) and would rather scan `approvals_state`
      // and sort: it is told the index (an error, not a slow scan, if the index could not serve).
      const index = sql.onDialectOrElse({ sqlite: () => sql`INDEXED BY approvals_open`, orElse: () => sql`` })
      // Never the sealed intent or result: a list reads many rows, and shows neither.
      return yield* sql`SELECT ${sql.literal(LIST_COLUMNS)}, NULL AS intent_sealed, NULL AS result_sealed
        FROM approvals ${index} WHERE state IN ('pending', 'approved') ${from}
        ORDER BY created_at, id LIMIT ${limit}`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
    })

    /**
     * The `limit` most recently finished approvals, newest first: a range of the `approvals_finished`
     * index (migration 0022), however many the table keeps until retention drops them.
     */
    const listFinished = Effect.fn("ApprovalRepo.listFinished")(function* (limit: number) {
      const index = sql.onDialectOrElse({ sqlite: () => sql`INDEXED BY approvals_finished`, orElse: () => sql`` })
      return yield* sql`SELECT ${sql.literal(LIST_COLUMNS)}, NULL AS intent_sealed, NULL AS result_sealed
        FROM approvals ${index} WHERE finished_at IS NOT NULL
        ORDER BY finished_at DESC, id DESC LIMIT ${limit}`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
    })

    /**
     * Retention: finished approvals older than `before` are deleted with their votes; each operation key
     * stays behind as a tombstone. One with an audit archive entry the receiver has not acknowledged
     * stays whole until it is (docs/audit-archive.md, "Shipping"). Returns how many were dropped.
     */
    const purge = Effect.fn("ApprovalRepo.purge")(function* (before: Date, batch: number) {
      const stamp = toStoredTimestamp(before)
      const attempt = Effect.gen(function* () {
        // Only what a tombstone keeps: the sealed columns stay on disk, unread.
        const rows = yield* sql`SELECT id, operation_key, state, finished_at FROM approvals
          WHERE state IN ${sql.in(finishedStates)} AND finished_at < ${stamp}
          AND NOT EXISTS (SELECT 1 FROM archive_entries
            WHERE archive_entries.approval_id = approvals.id AND archive_entries.acknowledged_at IS NULL)
          ORDER BY finished_at LIMIT ${batch}`.pipe(Effect.flatMap(Schema.decodeUnknown(Schema.Array(Purged))))
        if (rows.length === 0) return 0
        const keyed = rows.filter((row) => row.operation_key !== null)
        if (keyed.length > 0) {
          yield* sql`INSERT INTO approval_tombstones ${sql.insert(
            keyed.map((row) => ({
              operation_key: row.operation_key!,
              state: row.state,
              finished_at: toStoredTimestamp(row.finished_at ?? before)
            }))
          )} ON CONFLICT (operation_key) DO NOTHING`
        }
        yield* sql`DELETE FROM approvals WHERE id IN ${sql.in(rows.map((row) => row.id))}`
        return rows.length
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    /**
     * Votes of reviewers who may no longer review stop counting: on a pending approval they are
     * removed; an approved one whose quorum depended on them goes back to pending (its execution
     * deadline cleared) without them. The row, as it is now. Like `vote`, the first UPDATE locks the
     * row (PostgreSQL), and the quorum is counted after the removal: a withdrawal that comes late —
     * its votes already gone, and the approval approved again by others — changes nothing.
     */
    const withdrawVotes = Effect.fn("ApprovalRepo.withdrawVotes")(function* (
      id: string,
      reviewerIds: ReadonlyArray<string>
    ) {
      const now = new Date(yield* Clock.currentTimeMillis)
      const attempt = Effect.gen(function* () {
        if (reviewerIds.length === 0) return Option.getOrUndefined(yield* byId(id))
        const locked = yield* sql`UPDATE approvals SET revision = revision + 1
          WHERE id = ${id} AND state IN ('pending', 'approved') RETURNING *`.pipe(Effect.flatMap(decodeRows))
        const row = locked[0]
        if (row === undefined) return Option.getOrUndefined(yield* byId(id))
        const removed = yield* sql`DELETE FROM approval_votes WHERE approval_id = ${id}
          AND reviewer_id IN ${sql.in(reviewerIds)} RETURNING reviewer_id`
        if (removed.length === 0) return row
        const withdrawn = (after: ApprovalRow) =>
          appendApprovalEvents(
            sql,
            [{ row: after, facts: { action: "votes_withdrawn", actor: null, reason: "reviewer_not_eligible" } }],
            now
          ).pipe(Effect.as(after))
        if (row.state !== "approved") return yield* withdrawn(row)
        const left = yield* countOf(
          yield* sql`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM approval_votes WHERE approval_id = ${id}`
        )
        if (left >= row.required_approvals) return yield* withdrawn(row)
        const back = yield* sql`UPDATE approvals SET state = 'pending', approved_at = NULL, execute_by = NULL,
          revision = revision + 1 WHERE id = ${id} AND state = 'approved' RETURNING *`.pipe(Effect.flatMap(decodeRows))
        return yield* withdrawn(back[0] ?? row)
      })
      return yield* sql.withTransaction(attempt).pipe(Effect.orDie)
    })

    return {
      create,
      findById,
      votes,
      vote,
      finish,
      claim,
      release,
      expireDue,
      interrupted,
      remind,
      listOpen,
      listFinished,
      purge,
      withdrawVotes
    } as const
  })
}) {}
