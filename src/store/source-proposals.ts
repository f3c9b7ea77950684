import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { SourceKind } from "../sources/schema.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const ProposalStateColumn = Schema.Literal(
  "pending_approval",
  "applying",
  "applied",
  "rejected",
  "failed",
  "invalidated",
  "unknown"
)
export type ProposalStateColumn = typeof ProposalStateColumn.Type

/** Revisions a proposal was made against: record id → revision, 0 for a record that did not exist. */
export const BaseRevisions = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Int }))

export const ProposalRow = Schema.Struct({
  id: Schema.String,
  kind: SourceKind,
  target_id: Schema.String,
  action: Schema.Literal("create", "update"),
  /** The proposed definition, its secrets sealed for this proposal. */
  definition: Schema.String,
  base_revisions: BaseRevisions,
  state: ProposalStateColumn,
  proposed_by: Schema.String,
  proposed_by_name: Schema.String,
  created_at: StoredTimestamp,
  decided_by: Schema.NullOr(Schema.String),
  decided_by_name: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(StoredTimestamp),
  failure: Schema.NullOr(Schema.String)
})
export type ProposalRow = typeof ProposalRow.Type

const Rows = Schema.Array(ProposalRow)
const Ids = Schema.Array(Schema.Struct({ id: Schema.String }))

export interface NewProposal {
  readonly id: string
  readonly kind: SourceKind
  readonly targetId: string
  readonly action: "create" | "update"
  readonly definition: string
  readonly baseRevisions: Readonly<Record<string, number>>
  readonly proposedBy: { readonly user_id: string; readonly name: string }
  readonly at: Date
}

export interface Transition {
  readonly decidedBy?: { readonly user_id: string; readonly name: string }
  readonly at?: Date
  readonly failure?: string
}

/**
 * Persistence of `source_proposals`. A proposal moves between states by one conditional UPDATE from the
 * state its mover read, so two reviewers acting at once cannot both start applying it.
 */
export class ProposalRepo extends Effect.Service<ProposalRepo>()("gateway/ProposalRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const decode = Effect.flatMap(Schema.decodeUnknown(Rows))

    const insert = Effect.fn("ProposalRepo.insert")(function* (proposal: NewProposal) {
      yield* sql`INSERT INTO source_proposals ${sql.insert({
        id: proposal.id,
        kind: proposal.kind,
        target_id: proposal.targetId,
        action: proposal.action,
        definition: proposal.definition,
        base_revisions: JSON.stringify(proposal.baseRevisions),
        state: "pending_approval",
        proposed_by: proposal.proposedBy.user_id,
        proposed_by_name: proposal.proposedBy.name,
        created_at: toStoredTimestamp(proposal.at),
        decided_by: null,
        decided_by_name: null,
        decided_at: null,
        failure: null
      })}`.pipe(Effect.orDie)
    })

    const find = Effect.fn("ProposalRepo.find")(function* (id: string) {
      const rows = yield* sql`SELECT * FROM source_proposals WHERE id = ${id}`.pipe(decode, Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    /**
     * Proposals newest first by (created_at, id), of one state when given; `page`: at most `limit` of
     * them after `before` — a range of `source_proposals_state` or `source_proposals_recent`
     * (migration 0022). A list never opens a definition (up to 32 MiB each): it reads an empty one.
     */
    const list = Effect.fn("ProposalRepo.list")(function* (
      state?: ProposalStateColumn,
      page?: { readonly limit: number; readonly before?: { readonly createdAt: Date; readonly id: string } | undefined }
    ) {
      const conditions = [
        ...(state === undefined ? [] : [sql`state = ${state}`]),
        ...(page?.before === undefined
          ? []
          : [sql`(created_at, id) < (${toStoredTimestamp(page.before.createdAt)}, ${page.before.id})`])
      ]
      const where = conditions.length === 0 ? sql`` : sql`WHERE ${sql.and(conditions)}`
      const limit = page === undefined ? sql`` : sql`LIMIT ${page.limit}`
      return yield* sql`SELECT id, kind, target_id, action, '' AS definition, base_revisions, state, proposed_by,
        proposed_by_name, created_at, decided_by, decided_by_name, decided_at, failure
        FROM source_proposals ${where} ORDER BY created_at DESC, id DESC ${limit}`.pipe(decode, Effect.orDie)
    })

    /** True when the proposal was in `from` and is in `to` now. */
    const transition = Effect.fn("ProposalRepo.transition")(function* (
      id: string,
      from: ProposalStateColumn,
      to: ProposalStateColumn,
      change: Transition = {}
    ) {
      const rows = yield* sql`UPDATE source_proposals SET state = ${to},
        decided_by = COALESCE(${change.decidedBy?.user_id ?? null}, decided_by),
        decided_by_name = COALESCE(${change.decidedBy?.name ?? null}, decided_by_name),
        decided_at = COALESCE(${change.at === undefined ? null : toStoredTimestamp(change.at)}, decided_at),
        failure = ${change.failure ?? null}
        WHERE id = ${id} AND state = ${from} RETURNING id`.pipe(Effect.flatMap(Schema.decodeUnknown(Ids)), Effect.orDie)
      return rows.length === 1
    })

    /** Moves every proposal in `from` to `to` (start-up recovery); the ids moved. */
    const transitionAll = Effect.fn("ProposalRepo.transitionAll")(function* (
      from: ProposalStateColumn,
      to: ProposalStateColumn,
      failure: string
    ) {
      const rows = yield* sql`UPDATE source_proposals SET state = ${to}, failure = ${failure}
        WHERE state = ${from} RETURNING id`.pipe(Effect.flatMap(Schema.decodeUnknown(Ids)), Effect.orDie)
      return rows.map((row) => row.id)
    })

    return { insert, find, list, transition, transitionAll } as const
  })
}) {}
