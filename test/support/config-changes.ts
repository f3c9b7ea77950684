import { randomBytes } from "node:crypto"
import { Clock, Effect, Layer, Option } from "effect"
import {
  ConfigChanges,
  type Person,
  ProposalApplicationFailed,
  type ProposalDetail,
  ProposalNotPending,
  type ProposalSummary,
  SelfReview
} from "../../src/sources/changes.js"

/**
 * TEST STAND-IN for `ConfigChangesLive` (src/sources/changes-live.ts, written by the managed part and
 * not in this branch until merge): the `ConfigChanges` tag over real state held in memory, with the
 * contract's behaviour — only a pending proposal is decided, never by its proposer (`SelfReview`), and
 * an application can fail (`failNext`), which leaves it `failed` with a message saying a fresh
 * proposal is needed. The review pages' tests run against it; the live service replaces it after merge.
 */
export interface TestChanges {
  readonly layer: Layer.Layer<ConfigChanges>
  /** A new pending proposal; its id. */
  propose(input: {
    readonly proposer: Person
    readonly kind?: ProposalSummary["kind"]
    readonly target_id?: string
    readonly action?: ProposalSummary["action"]
    readonly diff?: ProposalDetail["diff"]
  }): string
  /** The proposal as stored now. */
  get(id: string): ProposalDetail | undefined
  /** Makes the next approval's application fail with `reason` (a concurrent edit, say). */
  failNext(reason: ProposalApplicationFailed["reason"]): void
  /**
   * Shows `id` as proposed by `shown` while the service still knows the real proposer: the pages'
   * checks pass and the service's own self-review refusal (defence in depth) is what answers.
   */
  disguise(id: string, shown: Person): void
  /** Ids of the proposals applied, in order: what reached the configuration. */
  readonly applied: Array<string>
  /** Every call the pages made to approve or reject, in order. */
  readonly calls: Array<{ readonly action: "approve" | "reject"; readonly id: string; readonly reviewer: Person }>
}

export const testChanges = (): TestChanges => {
  const proposals = new Map<string, ProposalDetail>()
  const disguised = new Map<string, Person>()
  const applied: Array<string> = []
  const calls: TestChanges["calls"] = []
  let failure: ProposalApplicationFailed["reason"] | undefined

  const summaryOf = ({ diff: _diff, ...summary }: ProposalDetail): ProposalSummary => summary

  const pending = (id: string, reviewer: Person) =>
    Effect.gen(function* () {
      const found = proposals.get(id)
      if (found === undefined) return yield* Effect.fail(new ProposalNotPending({ state: "invalidated" }))
      if (found.state !== "pending_approval") return yield* Effect.fail(new ProposalNotPending({ state: found.state }))
      if (found.proposed_by.user_id === reviewer.user_id) {
        return yield* Effect.fail(new SelfReview({ proposer: found.proposed_by.user_id }))
      }
      return found
    })

  const decided = (found: ProposalDetail, state: ProposalDetail["state"], reviewer: Person, extra = {}) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const next: ProposalDetail = {
        ...found,
        ...extra,
        state,
        decided_by: reviewer,
        decided_at: new Date(now).toISOString()
      }
      proposals.set(found.id, next)
      return next
    })

  const layer = Layer.succeed(ConfigChanges, {
    list: (filter) =>
      Effect.sync(() =>
        [...proposals.values()]
          .filter((proposal) => filter?.state === undefined || proposal.state === filter.state)
          .map(summaryOf)
      ),
    show: (id) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(proposals.get(id)), (found) => {
          const shown = disguised.get(id)
          return shown === undefined ? found : { ...found, proposed_by: shown }
        })
      ),
    approve: (id, reviewer) =>
      Effect.gen(function* () {
        calls.push({ action: "approve", id, reviewer })
        const found = yield* pending(id, reviewer)
        if (failure !== undefined) {
          const reason = failure
          failure = undefined
          const message = `The ${found.kind} ${found.target_id} changed since this proposal was made; a fresh proposal is needed.`
          yield* decided(found, "failed", reviewer, { failure: message })
          return yield* Effect.fail(new ProposalApplicationFailed({ reason, message }))
        }
        applied.push(id)
        return summaryOf(yield* decided(found, "applied", reviewer))
      }),
    reject: (id, reviewer) =>
      Effect.gen(function* () {
        calls.push({ action: "reject", id, reviewer })
        return summaryOf(yield* decided(yield* pending(id, reviewer), "rejected", reviewer))
      })
  })

  return {
    layer,
    propose: (input) => {
      const id = `prp_${randomBytes(12).toString("base64url")}`
      proposals.set(id, {
        id,
        kind: input.kind ?? "backend",
        target_id: input.target_id ?? "notes",
        action: input.action ?? "create",
        state: "pending_approval",
        proposed_by: input.proposer,
        created_at: new Date().toISOString(),
        diff: input.diff ?? [
          { path: "/url", before: undefined, after: "https://notes.internal.example/mcp" },
          { path: "/headers/authorization", before: undefined, after: { configured: true } }
        ]
      })
      return id
    },
    get: (id) => proposals.get(id),
    disguise: (id, shown) => {
      disguised.set(id, shown)
    },
    failNext: (reason) => {
      failure = reason
    },
    applied,
    calls
  }
}
