import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer, Option } from "effect"
import { Sealer } from "../crypto/sealer.js"
import { securityEvent } from "../events/security-log.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import { ProposalRepo, type ProposalRow } from "../store/source-proposals.js"
import { ReloadFailed, SourceApplier } from "./applier.js"
import {
  ConfigChanges,
  type Person,
  ProposalApplicationFailed,
  type ProposalDetail,
  ProposalNotPending,
  type ProposalSummary,
  SelfReview
} from "./changes.js"
import { type CommitRefused, commitWrite, type SourceWrite } from "./commit.js"
import { decodeSource, openDefinition, proposalContext } from "./definitions.js"
import { diffDefinitions } from "./diff.js"
import { storedSources } from "./stored.js"

export const summaryOf = (row: ProposalRow): ProposalSummary => ({
  id: row.id,
  kind: row.kind,
  target_id: row.target_id,
  action: row.action,
  state: row.state,
  proposed_by: { user_id: row.proposed_by, name: row.proposed_by_name },
  created_at: row.created_at.toISOString(),
  ...(row.decided_by === null ? {} : { decided_by: { user_id: row.decided_by, name: row.decided_by_name ?? "" } }),
  ...(row.decided_at === null ? {} : { decided_at: row.decided_at.toISOString() }),
  ...(row.failure === null ? {} : { failure: row.failure })
})

const fresh = "A fresh proposal is needed."

/** Why an application failed, in the words a reviewer and the proposer read. */
const failureText = (error: CommitRefused | ReloadFailed): ProposalApplicationFailed =>
  error._tag === "ReloadFailed"
    ? new ProposalApplicationFailed({
        reason: "reload_failed",
        message: `The change was not applied: ${error.message}. Nothing was written; the previous configuration keeps serving. ${fresh}`
      })
    : new ProposalApplicationFailed({
        reason: error.reason,
        message:
          error.reason === "target_changed"
            ? `"${error.id}" changed since this was proposed (its revision is now ${error.revision}); nothing was overwritten. ${fresh}`
            : `"${error.id}", which this change depends on, changed since it was proposed (its revision is now ${error.revision}); nothing was overwritten. ${fresh}`
      })

/**
 * Start-up (docs/tool-sources.md, "Review"): a proposal not yet reviewed is invalidated by the restart (it
 * was checked against a gateway that no longer runs), and one found `applying` was interrupted by a crash:
 * `unknown`, for an administrator to inspect. Run once before the first generation.
 */
export const recoverProposals = Effect.gen(function* () {
  const proposals = yield* ProposalRepo
  const invalidated = yield* proposals.transitionAll(
    "pending_approval",
    "invalidated",
    "The gateway restarted before this proposal was reviewed. A fresh proposal is needed."
  )
  const unknown = yield* proposals.transitionAll(
    "applying",
    "unknown",
    "The gateway stopped while applying this change: check whether it is in effect."
  )
  if (invalidated.length > 0) yield* securityEvent("config.invalidated", { proposals: invalidated })
  for (const id of unknown) yield* securityEvent("config.unknown", { proposal: id })
})

/**
 * Configuration changes under review (src/sources/changes.ts): proposals stored by the Management API,
 * approved or rejected by a security reviewer. Approving checks every revision the proposal recorded and
 * applies it through the one reload path with a commit step (src/sources/applier.ts), marking it applied
 * in the commit's transaction.
 */
export const ConfigChangesLive = Layer.effect(
  ConfigChanges,
  Effect.gen(function* () {
    const proposals = yield* ProposalRepo
    const repo = yield* ManagedSourceRepo
    const sealer = yield* Sealer
    const applier = yield* SourceApplier
    const audit = yield* AuditEventRepo
    const sql = yield* SqlClient.SqlClient
    const services = Layer.mergeAll(
      Layer.succeed(SqlClient.SqlClient, sql),
      Layer.succeed(ManagedSourceRepo, repo),
      Layer.succeed(Sealer, sealer),
      Layer.succeed(AuditEventRepo, audit)
    )
    const yamlBackends = () => applier.serving()?.config.backends ?? []
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const list: ConfigChanges["Type"]["list"] = (filter) =>
      Effect.map(
        proposals.list(
          filter?.state,
          filter?.limit === undefined ? undefined : { limit: filter.limit, before: filter.before }
        ),
        (rows) => rows.map(summaryOf)
      )

    const openProposal = (row: ProposalRow) =>
      Effect.gen(function* () {
        const encoded = yield* openDefinition(sealer, row.kind, row.definition, proposalContext(row.id))
        const decoded = decodeSource(row.kind, encoded)
        if (Either.isLeft(decoded)) return yield* Effect.dieMessage(`proposal ${row.id} no longer decodes`)
        return { encoded, source: decoded.right }
      })

    const show = (id: string) =>
      Effect.gen(function* () {
        const found = yield* proposals.find(id)
        if (Option.isNone(found)) return Option.none<ProposalDetail>()
        const row = found.value
        const { encoded } = yield* openProposal(row)
        const stored = yield* storedSources(yamlBackends()).pipe(Effect.provide(services))
        const active = stored.sources.find((each) => each.source.id === row.target_id)
        return Option.some<ProposalDetail>({
          ...summaryOf(row),
          diff: diffDefinitions(row.kind, active?.encoded, encoded)
        })
      })

    /** The proposal, unless the reviewer proposed it: self-review is refused here too (defence in depth). */
    const reviewable = (id: string, reviewer: Person) =>
      Effect.gen(function* () {
        const found = yield* proposals.find(id)
        // An unknown id cannot be decided, like one no longer pending.
        if (Option.isNone(found)) return yield* new ProposalNotPending({ state: "invalidated" })
        const row = found.value
        if (row.proposed_by === reviewer.user_id) {
          yield* securityEvent("config.self_review_refused", { proposal: id, reviewer: reviewer.user_id })
          return yield* new SelfReview({ proposer: row.proposed_by })
        }
        if (row.state !== "pending_approval") return yield* new ProposalNotPending({ state: row.state })
        return row
      })

    const stateNow = (id: string) =>
      Effect.map(proposals.find(id), (row) =>
        Option.match(row, { onNone: () => "invalidated" as const, onSome: (each) => each.state })
      )

    const fail = (row: ProposalRow, failure: ProposalApplicationFailed) =>
      Effect.gen(function* () {
        yield* proposals.transition(row.id, "applying", "failed", { failure: failure.message })
        yield* securityEvent("config.application_failed", {
          proposal: row.id,
          kind: row.kind,
          target: row.target_id,
          reason: failure.reason
        })
        return yield* failure
      })

    const approve = (id: string, reviewer: Person) =>
      Effect.gen(function* () {
        const row = yield* reviewable(id, reviewer)
        const at = yield* now
        if (!(yield* proposals.transition(id, "pending_approval", "applying", { decidedBy: reviewer, at }))) {
          return yield* new ProposalNotPending({ state: yield* stateNow(id) })
        }
        yield* securityEvent("config.approved", {
          proposal: id,
          kind: row.kind,
          target: row.target_id,
          proposer: row.proposed_by,
          reviewer: reviewer.user_id
        })
        const { source } = yield* openProposal(row)
        const write: SourceWrite = {
          kind: row.kind,
          id: row.target_id,
          action: row.action,
          source,
          baseRevisions: row.base_revisions
        }
        const commit = commitWrite(write, {
          yamlBackends: yamlBackends(),
          actorId: reviewer.user_id,
          requestId: undefined,
          at,
          proposalId: id,
          alongside: Effect.asVoid(proposals.transition(id, "applying", "applied", { at }))
        }).pipe(Effect.provide(services))
        const applied = yield* Effect.either(applier.apply({ change: { id: row.target_id, source } }, commit))
        if (Either.isLeft(applied)) return yield* fail(row, failureText(applied.left))
        yield* securityEvent("config.applied", {
          proposal: id,
          kind: row.kind,
          target: row.target_id,
          action: row.action,
          revision: applied.right.revision ?? null,
          reviewer: reviewer.user_id
        })
        return summaryOf(Option.getOrThrow(yield* proposals.find(id)))
      }).pipe(
        // Anything unforeseen after `applying` (a defect) must not leave the proposal there until a restart.
        Effect.catchAllDefect((defect) =>
          Effect.zipRight(
            proposals.transition(id, "applying", "failed", { failure: "The change could not be applied. " + fresh }),
            Effect.die(defect)
          )
        )
      )

    const reject = (id: string, reviewer: Person) =>
      Effect.gen(function* () {
        const row = yield* reviewable(id, reviewer)
        const at = yield* now
        if (!(yield* proposals.transition(id, "pending_approval", "rejected", { decidedBy: reviewer, at }))) {
          return yield* new ProposalNotPending({ state: yield* stateNow(id) })
        }
        yield* audit.insert({
          at,
          actorId: reviewer.user_id,
          action: "source.proposal_rejected",
          targetKind: "source_proposal",
          targetId: id,
          detail: { kind: row.kind, target: row.target_id },
          requestId: undefined
        })
        yield* securityEvent("config.rejected", {
          proposal: id,
          kind: row.kind,
          target: row.target_id,
          proposer: row.proposed_by,
          reviewer: reviewer.user_id
        })
        return summaryOf(Option.getOrThrow(yield* proposals.find(id)))
      })

    return { list, show, approve, reject }
  })
)

export { ReloadFailed }
