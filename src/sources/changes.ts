import { Context, Data, type Effect, type Option } from "effect"
import type { ProposalStateColumn } from "../store/source-proposals.js"
import type { SourceKind } from "./schema.js"

/**
 * Configuration changes under review (docs/tool-sources.md, "Review"): proposals of a create or update of
 * a managed tool source, waiting for a security reviewer. Who may review is decided by the review pages;
 * this service refuses self-review again and applies an approved proposal through a new generation.
 */

/** The states a proposal moves through, as stored (src/store/source-proposals.ts). */
export type ProposalState = ProposalStateColumn

/** Each state as people read it, on the review pages and in the console. */
export const proposalStateNames: Readonly<Record<ProposalState, string>> = {
  pending_approval: "waiting for review",
  applying: "being applied",
  applied: "applied",
  rejected: "rejected",
  failed: "application failed",
  invalidated: "invalidated by a restart",
  unknown: "interrupted while applying: to be inspected"
}

export interface Person {
  readonly user_id: string
  readonly name: string
}

export interface ProposalSummary {
  readonly id: string
  readonly kind: SourceKind
  readonly target_id: string
  readonly action: "create" | "update"
  readonly state: ProposalState
  readonly proposed_by: Person
  readonly created_at: string
  readonly decided_by?: Person
  readonly decided_at?: string
  readonly failure?: string
}

export interface ProposalDetail extends ProposalSummary {
  /** What would change against what is active; secrets masked. */
  readonly diff: ReadonlyArray<{ readonly path: string; readonly before: unknown; readonly after: unknown }>
}

export class ProposalNotPending extends Data.TaggedError("ProposalNotPending")<{ readonly state: ProposalState }> {}
export class SelfReview extends Data.TaggedError("SelfReview")<{ readonly proposer: string }> {}
export class ProposalApplicationFailed extends Data.TaggedError("ProposalApplicationFailed")<{
  readonly reason: "target_changed" | "dependency_changed" | "reload_failed"
  readonly message: string
}> {}

export class ConfigChanges extends Context.Tag("gateway/ConfigChanges")<
  ConfigChanges,
  {
    /**
     * Newest first, of one state when given; with `limit`, that many after `before` (the console's
     * pages), else every one (the Management API's list).
     */
    readonly list: (filter?: {
      readonly state?: ProposalState
      readonly limit?: number
      readonly before?: { readonly createdAt: Date; readonly id: string }
    }) => Effect.Effect<ReadonlyArray<ProposalSummary>>
    readonly show: (id: string) => Effect.Effect<Option.Option<ProposalDetail>>
    readonly approve: (
      id: string,
      reviewer: Person
    ) => Effect.Effect<ProposalSummary, ProposalNotPending | SelfReview | ProposalApplicationFailed>
    readonly reject: (id: string, reviewer: Person) => Effect.Effect<ProposalSummary, ProposalNotPending | SelfReview>
  }
>() {}
