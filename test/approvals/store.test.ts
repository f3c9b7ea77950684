/**
 * The write-approval store (src/store/approvals.ts) on SQLite and PostgreSQL: every change of state is
 * one conditional UPDATE, so concurrent reviewers, resumes and requests cannot race past it; creation
 * holds the requester's lock, so the active limit and the operation key hold under concurrency; what
 * is stored survives a restart (an execution cut short becomes unknown, never replayed); intents and
 * results are sealed, and a row altered in the database is never executed.
 */
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import { intentHash } from "../../src/approvals/intent.js"
import { Approvals } from "../../src/approvals/service.js"
import {
  ApprovalRepo,
  type ApprovalRow,
  ApprovalState,
  type Created,
  type NewApproval,
  type NewVote,
  pendingApprovalRow
} from "../../src/store/approvals.js"
import { backfillRequesterIds } from "../../src/store/migrations/0019_directory_reset_and_requester.js"
import { UserRepo } from "../../src/store/users.js"
import {
  approvalIn,
  approvalSettings,
  approveAs,
  claimedOf,
  deployArgs,
  doneOf,
  ISSUER,
  newPeople,
  newReviewer,
  pendingOf,
  requestWrite,
  sharedApprovalStores,
  storedRow,
  twoReviews
} from "../support/approval-service.js"
import { storeKinds } from "../support/databases.js"

const stores = sharedApprovalStores()
afterAll(() => stores.close())

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
const plus = (at: Date, ms: number) => new Date(at.getTime() + ms)

let sequence = 0
/** An approval as the service would hand it to the store; `overrides` change what the test is about. */
const newApproval = (at: Date, overrides: Partial<NewApproval> = {}): NewApproval => {
  const id = `apr_store_${sequence++}`
  return {
    id,
    operationKey: `key-${id}`,
    issuer: ISSUER,
    subject: "alice",
    requesterId: "user-alice",
    clientId: "cli",
    backend: "ops",
    tool: "deploy",
    exposedName: "ops__deploy",
    sourceHash: "source-1",
    intentSealed: "v1.sealed-intent",
    intentHash: "intent-hash-1",
    requiredApprovals: 1,
    requireStepUp: false,
    approvers: [],
    risk: "base",
    createdAt: at,
    expiresAt: plus(at, HOUR),
    ...overrides
  }
}

const voteBy = (reviewerId: string, stepUp?: { readonly acr: string; readonly at: Date }): NewVote => ({
  reviewerId,
  reviewerName: `Reviewer ${reviewerId}`,
  stepUpAcr: stepUp?.acr,
  stepUpAt: stepUp?.at
})

const createdOf = (created: Created): ApprovalRow => {
  if (created._tag !== "Created") throw new Error(`expected Created, got ${created._tag}`)
  return created.row
}

/** Creates an approval and brings it to `state` through the repository's own transitions. */
const repoApprovalIn = (at: Date, state: "pending" | "approved" | "executing", overrides: Partial<NewApproval> = {}) =>
  Effect.gen(function* () {
    const repo = yield* ApprovalRepo
    const row = createdOf(yield* repo.create(newApproval(at, overrides), 20))
    if (state === "pending") return row
    const voted = yield* repo.vote(row.id, voteBy("reviewer-1"), at, plus(at, 10 * MINUTE))
    if (state === "approved") return voted.row!
    return Option.getOrThrow(yield* repo.claim(row.id, at))
  })

/**
 * Writes `approvals` as pending rows, 500 to a statement, with the columns `ApprovalRepo.create` writes
 * (and no outbox event): for tests that need thousands of open approvals to list, not to create.
 */
const insertPending = (approvals: ReadonlyArray<NewApproval>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (let start = 0; start < approvals.length; start += 500) {
      const rows = approvals.slice(start, start + 500).map(pendingApprovalRow)
      yield* sql`INSERT INTO approvals ${sql.insert(rows)}`
    }
  })

const stateOf = (id: string) => Effect.map(storedRow(id), (row) => row?.state)

const countRows = (where: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly n: number }>`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM approvals WHERE ${sql.unsafe(where)}`
  ).pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)))

describe.each(storeKinds)("ApprovalRepo (%s)", (kind) => {
  it.scoped("create stores a pending approval exactly as given and reads it back", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const input = newApproval(at, {
        clientId: undefined,
        requiredApprovals: 2,
        requireStepUp: true,
        approvers: ["reviewer-a", "reviewer-b"],
        risk: "raised by risk rule 0"
      })
      const row = createdOf(yield* repo.create(input, 20))
      expect(row).toEqual({
        id: input.id,
        operation_key: input.operationKey,
        issuer: ISSUER,
        subject: "alice",
        requester_id: "user-alice",
        client_id: null,
        backend: "ops",
        tool: "deploy",
        exposed_name: "ops__deploy",
        source_hash: "source-1",
        intent_sealed: "v1.sealed-intent",
        intent_hash: "intent-hash-1",
        required_approvals: 2,
        require_step_up: true,
        approvers: ["reviewer-a", "reviewer-b"],
        risk: "raised by risk rule 0",
        state: "pending",
        created_at: at,
        expires_at: plus(at, HOUR),
        approved_at: null,
        execute_by: null,
        finished_at: null,
        decided_by: null,
        result_sealed: null,
        revision: 1
      })
      expect(Option.getOrThrow(yield* repo.findById(input.id))).toEqual(row)
      expect(Option.isNone(yield* repo.findById("apr_never_created"))).toBe(true)
      // Without an operation id there is no key: such approvals never collide.
      const keyless = createdOf(yield* repo.create(newApproval(at, { operationKey: undefined }), 20))
      const another = createdOf(yield* repo.create(newApproval(at, { operationKey: undefined }), 20))
      expect(keyless.operation_key).toBeNull()
      expect(another.id).not.toBe(keyless.id)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("create with a known operation key answers Existing with the stored row and writes nothing", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const first = createdOf(yield* repo.create(newApproval(at, { operationKey: "key-shared" }), 20))
      const again = yield* repo.create(newApproval(at, { operationKey: "key-shared", intentHash: "other-intent" }), 20)
      expect(again).toEqual({ _tag: "Existing", row: first })
      expect(yield* countRows("1 = 1")).toBe(1)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "create refuses the 21st active approval of one issuer and subject (TooMany); finished ones, other subjects and issuers do not count",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const at = yield* now
        const bob = { subject: "bob" }
        // Active means pending, approved or executing.
        yield* repoApprovalIn(at, "approved", bob)
        const executing = yield* repoApprovalIn(at, "executing", bob)
        const keyed = createdOf(yield* repo.create(newApproval(at, { ...bob, operationKey: "bob-retry" }), 20))
        for (let index = 0; index < 17; index++) yield* repo.create(newApproval(at, bob), 20)
        expect(yield* countRows("subject = 'bob'")).toBe(20)
        expect(yield* repo.create(newApproval(at, bob), 20)).toEqual({ _tag: "TooMany", active: 20 })
        // A retry of an approval the requester has is still answered at the limit.
        expect(yield* repo.create(newApproval(at, { ...bob, operationKey: "bob-retry" }), 20)).toEqual({
          _tag: "Existing",
          row: keyed
        })
        // Other requesters have their own count: another subject, and the same subject of another issuer.
        expect((yield* repo.create(newApproval(at, { subject: "carol" }), 20))._tag).toBe("Created")
        expect((yield* repo.create(newApproval(at, { ...bob, issuer: "https://other.example.com" }), 20))._tag).toBe(
          "Created"
        )
        // A finished approval frees its place.
        yield* repo.finish(executing.id, ["executing"], "completed", at, { resultSealed: "v1.result" })
        expect((yield* repo.create(newApproval(at, bob), 20))._tag).toBe("Created")
        expect(yield* repo.create(newApproval(at, bob), 20)).toEqual({ _tag: "TooMany", active: 20 })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "vote counts each reviewer once; the vote reaching the quorum approves and starts the execution deadline",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const at = yield* now
        const row = createdOf(yield* repo.create(newApproval(at, { requiredApprovals: 2 }), 20))
        const first = yield* repo.vote(row.id, voteBy("reviewer-1"), at, plus(at, 10 * MINUTE))
        expect(first._tag).toBe("Voted")
        expect(first.row).toMatchObject({ state: "pending", approved_at: null, execute_by: null })
        const twice = yield* repo.vote(row.id, voteBy("reviewer-1"), at, plus(at, 10 * MINUTE))
        expect(twice._tag).toBe("AlreadyVoted")
        yield* TestClock.adjust("1 minute")
        const later = yield* now
        const stepUpAt = plus(later, -30_000)
        const second = yield* repo.vote(
          row.id,
          voteBy("reviewer-2", { acr: "phr", at: stepUpAt }),
          later,
          plus(later, 10 * MINUTE)
        )
        expect(second._tag).toBe("Voted")
        expect(second.row).toMatchObject({
          state: "approved",
          approved_at: later,
          execute_by: plus(later, 10 * MINUTE)
        })
        expect(yield* repo.votes(row.id)).toEqual([
          {
            approval_id: row.id,
            reviewer_id: "reviewer-1",
            reviewer_name: "Reviewer reviewer-1",
            step_up_acr: null,
            step_up_at: null,
            voted_at: at
          },
          {
            approval_id: row.id,
            reviewer_id: "reviewer-2",
            reviewer_name: "Reviewer reviewer-2",
            step_up_acr: "phr",
            step_up_at: stepUpAt,
            voted_at: later
          }
        ])
        // Approved: no more votes are recorded.
        const third = yield* repo.vote(row.id, voteBy("reviewer-3"), later, plus(later, 10 * MINUTE))
        expect(third).toMatchObject({ _tag: "NotPending", row: { id: row.id, state: "approved" } })
        expect(yield* repo.votes(row.id)).toHaveLength(2)
        expect(yield* repo.vote("apr_never_created", voteBy("reviewer-1"), later, later)).toEqual({
          _tag: "NotPending",
          row: undefined
        })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("vote records nothing on a pending approval past its expiry, even before the sweep expired it", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const row = createdOf(yield* repo.create(newApproval(at, { expiresAt: plus(at, MINUTE) }), 20))
      const late = yield* repo.vote(row.id, voteBy("reviewer-1"), plus(at, MINUTE), plus(at, 11 * MINUTE))
      expect(late).toMatchObject({ _tag: "NotPending", row: { state: "pending" } })
      expect(yield* repo.votes(row.id)).toEqual([])
      const inTime = yield* repo.vote(row.id, voteBy("reviewer-1"), plus(at, MINUTE - 1), plus(at, 11 * MINUTE))
      expect(inTime).toMatchObject({ _tag: "Voted", row: { state: "approved" } })
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("finish moves an approval only from the states it names, recording who decided and the sealed result", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const row = yield* repoApprovalIn(at, "pending")
      expect(Option.isNone(yield* repo.finish(row.id, ["approved"], "revoked", at))).toBe(true)
      expect(yield* stateOf(row.id)).toBe("pending")
      const rejected = Option.getOrThrow(
        yield* repo.finish(row.id, ["pending"], "rejected", plus(at, 5), { decidedBy: "reviewer-1" })
      )
      expect(rejected).toMatchObject({
        state: "rejected",
        finished_at: plus(at, 5),
        decided_by: "reviewer-1",
        result_sealed: null,
        revision: row.revision + 1
      })
      expect(Option.isNone(yield* repo.finish(row.id, ["pending"], "revoked", at))).toBe(true)
      expect(yield* stateOf(row.id)).toBe("rejected")

      const executing = yield* repoApprovalIn(at, "executing")
      const completed = Option.getOrThrow(
        yield* repo.finish(executing.id, ["executing"], "completed", at, { resultSealed: "v1.sealed-result" })
      )
      expect(completed).toMatchObject({ state: "completed", result_sealed: "v1.sealed-result", decided_by: null })
      expect(Option.isNone(yield* repo.finish(executing.id, ["executing"], "unknown", at))).toBe(true)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "claim takes only an approved approval before its execute_by; release makes an unsent claim approved again",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const at = yield* now
        const pending = yield* repoApprovalIn(at, "pending")
        expect(Option.isNone(yield* repo.claim(pending.id, at))).toBe(true)
        const approved = yield* repoApprovalIn(at, "approved")
        expect(approved.execute_by).toEqual(plus(at, 10 * MINUTE))
        // The deadline is exclusive.
        expect(Option.isNone(yield* repo.claim(approved.id, plus(at, 10 * MINUTE)))).toBe(true)
        const claimed = Option.getOrThrow(yield* repo.claim(approved.id, plus(at, 10 * MINUTE - 1)))
        expect(claimed).toMatchObject({ state: "executing", revision: approved.revision + 1 })
        expect(Option.isNone(yield* repo.claim(approved.id, at))).toBe(true)
        yield* repo.release(approved.id)
        expect(yield* stateOf(approved.id)).toBe("approved")
        expect(Option.isSome(yield* repo.claim(approved.id, at))).toBe(true)
        // Release touches only an executing approval.
        yield* repo.release(pending.id)
        expect(yield* stateOf(pending.id)).toBe("pending")
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "expireDue expires pending approvals at expires_at and approved ones at execute_by; executing ones stay",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const at = yield* now
        const soon = yield* repoApprovalIn(at, "pending", { expiresAt: plus(at, HOUR) })
        const later = yield* repoApprovalIn(at, "pending", { expiresAt: plus(at, 2 * HOUR) })
        const approved = yield* repoApprovalIn(at, "approved")
        const executing = yield* repoApprovalIn(at, "executing")
        expect(yield* repo.expireDue(plus(at, 10 * MINUTE - 1))).toEqual([])
        const first = yield* repo.expireDue(plus(at, 10 * MINUTE))
        expect(first.map((row) => [row.id, row.state, row.finished_at])).toEqual([
          [approved.id, "expired", plus(at, 10 * MINUTE)]
        ])
        const second = yield* repo.expireDue(plus(at, HOUR))
        expect(second.map((row) => row.id)).toEqual([soon.id])
        expect(yield* stateOf(later.id)).toBe("pending")
        expect(yield* stateOf(executing.id)).toBe("executing")
        expect(yield* repo.expireDue(plus(at, HOUR))).toEqual([])
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("interrupted turns every executing approval unknown, and nothing else", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const pending = yield* repoApprovalIn(at, "pending")
      const approved = yield* repoApprovalIn(at, "approved")
      const executing = yield* repoApprovalIn(at, "executing")
      const changed = yield* repo.interrupted(plus(at, 1))
      expect(changed.map((row) => [row.id, row.state, row.finished_at])).toEqual([
        [executing.id, "unknown", plus(at, 1)]
      ])
      expect(yield* stateOf(pending.id)).toBe("pending")
      expect(yield* stateOf(approved.id)).toBe("approved")
      expect(yield* repo.interrupted(plus(at, 2))).toEqual([])
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("listOpen lists pending and approved approvals, oldest first, up to the limit", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const second = yield* repoApprovalIn(plus(at, 2), "approved")
      const first = yield* repoApprovalIn(plus(at, 1), "pending")
      yield* repoApprovalIn(plus(at, 0), "executing")
      const rejected = yield* repoApprovalIn(at, "pending")
      yield* repo.finish(rejected.id, ["pending"], "rejected", at)
      const third = yield* repoApprovalIn(plus(at, 3), "pending")
      expect((yield* repo.listOpen(10)).map((row) => row.id)).toEqual([first.id, second.id, third.id])
      expect((yield* repo.listOpen(1)).map((row) => row.id)).toEqual([first.id])
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("listOpen pages by creation time, then id: walked one row at a time it gives the whole list", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const create = (createdAt: Date, id: string, state: "pending" | "approved" = "pending") =>
        repoApprovalIn(createdAt, state, { id, operationKey: `key-${id}` })
      // Created first, with the id that sorts last; three created in one millisecond; then one whose
      // id sorts before all of them: the creation time orders first, the id only within a millisecond.
      yield* create(at, "apr_z_first")
      for (const id of ["apr_m_tie_c", "apr_m_tie_a", "apr_m_tie_b"]) yield* create(plus(at, 1), id)
      yield* create(plus(at, 2), "apr_a_last", "approved")
      const whole = (yield* repo.listOpen(100)).map((row) => row.id)
      expect(whole).toEqual(["apr_z_first", "apr_m_tie_a", "apr_m_tie_b", "apr_m_tie_c", "apr_a_last"])
      const walked: Array<string> = []
      for (let page = yield* repo.listOpen(1); page.length > 0; ) {
        const row = page[0]!
        walked.push(row.id)
        page = yield* repo.listOpen(1, { createdAt: row.created_at, id: row.id })
      }
      expect(walked).toEqual(whole)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("the review list shows a reviewer's oldest 2,000, found behind 2,000 open ones they may not see", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      // Older, and reviewed by a named reviewer only: not this reviewer's to see. The first of each kind
      // through the repository; the thousands of others written directly (what is tested is the list).
      const hidden = (index: number) =>
        newApproval(plus(at, index), { subject: `hidden-${index}`, approvers: ["local:someone-else"] })
      createdOf(yield* repo.create(hidden(0), 20))
      yield* insertPending(Array.from({ length: 2_099 }, (_, index) => hidden(index + 1)))
      // Newer, and any approver's: one more than the list shows.
      const visible = (index: number) => newApproval(plus(at, 10_000 + index), { subject: `visible-${index}` })
      const first = createdOf(yield* repo.create(visible(0), 20))
      const others = Array.from({ length: 2_000 }, (_, index) => visible(index + 1))
      yield* insertPending(others)
      const listed = (yield* (yield* Approvals).openFor(yield* newReviewer)).map((row) => row.id)
      expect(listed).toEqual([first.id, ...others.slice(0, 1_999).map((row) => row.id)])
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "purge drops finished approvals older than the cutoff with their votes and leaves one tombstone per operation key",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const sql = yield* SqlClient.SqlClient
        const at = yield* now
        const rejected = yield* repoApprovalIn(at, "pending", { requiredApprovals: 2 })
        yield* repo.vote(rejected.id, voteBy("reviewer-1"), at, plus(at, 10 * MINUTE))
        yield* repo.finish(rejected.id, ["pending"], "rejected", at, { decidedBy: "reviewer-2" })
        const completed = yield* repoApprovalIn(at, "executing")
        yield* repo.finish(completed.id, ["executing"], "completed", plus(at, HOUR), { resultSealed: "v1.result" })
        const keyless = yield* repoApprovalIn(at, "pending", { operationKey: undefined })
        yield* repo.finish(keyless.id, ["pending"], "revoked", at)
        const young = yield* repoApprovalIn(at, "pending")
        yield* repo.finish(young.id, ["pending"], "revoked", plus(at, 2 * DAY))
        const open = yield* repoApprovalIn(at, "pending", { expiresAt: plus(at, 3 * DAY) })

        expect(yield* repo.purge(plus(at, DAY), 500)).toBe(3)
        for (const gone of [rejected, completed, keyless]) expect(yield* storedRow(gone.id)).toBeUndefined()
        expect(yield* stateOf(young.id)).toBe("revoked")
        expect(yield* stateOf(open.id)).toBe("pending")
        expect(yield* sql`SELECT reviewer_id FROM approval_votes WHERE approval_id = ${rejected.id}`).toEqual([])
        const tombstones = yield* sql<{
          readonly operation_key: string
          readonly state: string
        }>`SELECT operation_key, state FROM approval_tombstones ORDER BY state`
        expect(tombstones).toEqual([
          { operation_key: completed.operation_key, state: "completed" },
          { operation_key: rejected.operation_key, state: "rejected" }
        ])
        // The key is spent for good: not even a new approval with it can be created.
        expect(yield* repo.create(newApproval(at, { operationKey: rejected.operation_key! }), 20)).toEqual({
          _tag: "Spent",
          state: "rejected"
        })
        expect(yield* repo.purge(plus(at, DAY), 500)).toBe(0)

        // In batches: at most `batch` per call, oldest first.
        for (let index = 0; index < 3; index++) {
          const row = yield* repoApprovalIn(at, "pending")
          yield* repo.finish(row.id, ["pending"], "rejected", plus(at, index))
        }
        expect(yield* repo.purge(plus(at, DAY), 2)).toBe(2)
        expect(yield* repo.purge(plus(at, DAY), 2)).toBe(1)
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "withdrawVotes removes the named votes; an approved approval goes back to pending without its deadline; others stay as they are",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const at = yield* now
        const deadline = plus(at, 10 * MINUTE)
        const pending = yield* repoApprovalIn(at, "pending", { requiredApprovals: 2 })
        yield* repo.vote(pending.id, voteBy("reviewer-1"), at, deadline)
        expect(yield* repo.withdrawVotes(pending.id, ["reviewer-1", "reviewer-9"])).toMatchObject({
          state: "pending",
          execute_by: null
        })
        expect(yield* repo.votes(pending.id)).toEqual([])

        const approved = yield* repoApprovalIn(at, "pending", { requiredApprovals: 2 })
        yield* repo.vote(approved.id, voteBy("reviewer-1"), at, deadline)
        expect((yield* repo.vote(approved.id, voteBy("reviewer-2"), at, deadline)).row?.state).toBe("approved")
        const back = yield* repo.withdrawVotes(approved.id, ["reviewer-2"])
        expect(back).toMatchObject({ state: "pending", approved_at: null, execute_by: null })
        expect((yield* repo.votes(approved.id)).map((vote) => vote.reviewer_id)).toEqual(["reviewer-1"])
        expect(Option.isNone(yield* repo.claim(approved.id, at))).toBe(true)
        // Another second vote approves it again, with a deadline of its own.
        yield* TestClock.adjust("1 minute")
        const later = yield* now
        const again = yield* repo.vote(approved.id, voteBy("reviewer-3"), later, plus(later, 10 * MINUTE))
        expect(again.row).toMatchObject({ state: "approved", approved_at: later, execute_by: plus(later, 10 * MINUTE) })

        // Nothing changes once executing or finished.
        const executing = yield* repoApprovalIn(at, "executing")
        expect(yield* repo.withdrawVotes(executing.id, ["reviewer-1"])).toEqual(executing)
        expect(yield* repo.votes(executing.id)).toHaveLength(1)
        const rejected = Option.getOrThrow(yield* repo.finish(pending.id, ["pending"], "rejected", at))
        expect(yield* repo.withdrawVotes(rejected.id, ["reviewer-1"])).toEqual(rejected)
        expect(yield* repo.withdrawVotes("apr_never_created", ["reviewer-1"])).toBeUndefined()
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "withdrawVotes leaves an approval approved whose quorum does not depend on the withdrawn votes (a late withdrawal after a re-approval)",
    () =>
      Effect.gen(function* () {
        const repo = yield* ApprovalRepo
        const at = yield* now
        const deadline = plus(at, 10 * MINUTE)
        const row = yield* repoApprovalIn(at, "pending", { requiredApprovals: 2 })
        yield* repo.vote(row.id, voteBy("reviewer-1"), at, deadline)
        yield* repo.vote(row.id, voteBy("reviewer-2"), at, deadline)
        // Two reads found reviewer-1 stale; the first withdrawal runs and a third reviewer approves again…
        expect((yield* repo.withdrawVotes(row.id, ["reviewer-1"]))?.state).toBe("pending")
        const approved = (yield* repo.vote(row.id, voteBy("reviewer-3"), at, deadline)).row!
        expect(approved.state).toBe("approved")
        // …then the second, late withdrawal of the same vote must not undo that approval.
        expect(yield* repo.withdrawVotes(row.id, ["reviewer-1"])).toMatchObject({
          state: "approved",
          approved_at: at,
          execute_by: deadline
        })
        // Nor does withdrawing someone who never voted.
        expect((yield* repo.withdrawVotes(row.id, ["reviewer-9"]))?.state).toBe("approved")
        expect(Option.isSome(yield* repo.claim(row.id, at))).toBe(true)
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  // ——— Races: every transition is decided by the store, whatever the interleaving ———

  it.scoped("two reviewers voting at once on a quorum of 2 approve exactly once, with both votes", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const rows = yield* Effect.forEach(Array.from({ length: 6 }), () =>
        repoApprovalIn(at, "pending", { requiredApprovals: 2 })
      )
      const outcomes = yield* Effect.forEach(
        rows,
        (row) =>
          Effect.all(
            [
              repo.vote(row.id, voteBy("reviewer-1"), at, plus(at, 10 * MINUTE)),
              repo.vote(row.id, voteBy("reviewer-2"), at, plus(at, 10 * MINUTE))
            ],
            { concurrency: "unbounded" }
          ),
        { concurrency: "unbounded" }
      )
      for (const [index, pair] of outcomes.entries()) {
        expect(pair.map((outcome) => outcome._tag)).toEqual(["Voted", "Voted"])
        expect(pair.filter((outcome) => outcome.row?.state === "approved")).toHaveLength(1)
        const stored = (yield* storedRow(rows[index]!.id))!
        // Created (1), two votes (+2) and one approval (+1).
        expect(stored).toMatchObject({ state: "approved", revision: 4 })
        expect(yield* repo.votes(stored.id)).toHaveLength(2)
      }
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("of ten concurrent claims of one approved approval exactly one wins", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const approved = yield* repoApprovalIn(at, "approved")
      const claims = yield* Effect.forEach(Array.from({ length: 10 }), () => repo.claim(approved.id, at), {
        concurrency: "unbounded"
      })
      expect(claims.filter(Option.isSome)).toHaveLength(1)
      expect(yield* storedRow(approved.id)).toMatchObject({ state: "executing", revision: approved.revision + 1 })
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("concurrent creates with one operation key create one approval; the others get it as Existing", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const results = yield* Effect.forEach(
        Array.from({ length: 5 }),
        () => repo.create(newApproval(at, { operationKey: "raced-key" }), 20),
        { concurrency: "unbounded" }
      )
      const created = results.filter((result) => result._tag === "Created")
      expect(created).toHaveLength(1)
      const id = created[0]!.row.id
      expect(
        results
          .filter((result) => result._tag === "Existing")
          .map((result) => result._tag === "Existing" && result.row.id)
      ).toEqual([id, id, id, id])
      expect(yield* countRows("1 = 1")).toBe(1)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("of 25 concurrent creates by one requester exactly 20 are created and 5 are TooMany", () =>
    Effect.gen(function* () {
      const repo = yield* ApprovalRepo
      const at = yield* now
      const results = yield* Effect.forEach(Array.from({ length: 25 }), () => repo.create(newApproval(at), 20), {
        concurrency: "unbounded"
      })
      expect(results.filter((result) => result._tag === "Created")).toHaveLength(20)
      expect(results.filter((result) => result._tag === "TooMany")).toHaveLength(5)
      expect(yield* countRows("subject = 'alice'")).toBe(20)
    }).pipe(Effect.provide(stores.layer(kind)))
  )
})

const allStates = ApprovalState.literals

describe.each(storeKinds)("requester ids of approvals from before them (%s)", (kind) => {
  it.scoped(
    "the migration gives each approval the one person its issuer and subject name, and none when two could be meant",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const users = yield* UserRepo
        const repo = yield* ApprovalRepo
        const at = yield* now
        const idp = "https://idp.example.com"
        const tag = `${kind}-${Date.now()}`
        const local = yield* users.insertLocal({ kind: "local", username: `u-${tag}`, displayName: "U", at })
        const external = yield* users.insertEnterprise({
          namespace: `external:${idp}`,
          externalSubject: `s-${tag}`,
          displayName: "E",
          at
        })
        // An external subject spelled like the local user's id: an approval with it could mean either.
        yield* users.insertEnterprise({ namespace: `external:${idp}`, externalSubject: local, displayName: "X", at })
        const rows = [
          newApproval(at, { subject: local }),
          newApproval(at, { issuer: idp, subject: `s-${tag}` }),
          newApproval(at, { issuer: idp, subject: local }),
          newApproval(at, { subject: "nobody-here" })
        ]
        for (const row of rows) createdOf(yield* repo.create(row, 20))
        yield* sql`UPDATE approvals SET requester_id = NULL`
        yield* backfillRequesterIds
        const found = []
        for (const row of rows) found.push((yield* storedRow(row.id))?.requester_id)
        expect(found).toEqual([local, external, null, null])
      }).pipe(Effect.provide(stores.layer(kind)))
  )
})

describe.each(storeKinds)("stored approvals (%s)", (kind) => {
  it.scoped(
    "every state survives a restart as it was, except executing, which becomes unknown at recover and is never replayed",
    () =>
      Effect.gen(function* () {
        const storage = yield* stores.storage(kind)
        const before = yield* Effect.gen(function* () {
          const repo = yield* ApprovalRepo
          const people = yield* newPeople
          const rows = new Map<ApprovalState, { readonly row: ApprovalRow; readonly args: Record<string, unknown> }>()
          for (const state of allStates) rows.set(state, yield* approvalIn(people, state))
          // A quorum-2 approval with one of its votes: the votes survive too.
          const halfway = pendingOf(yield* requestWrite(people.requester.caller, deployArgs(), { policy: twoReviews }))
          const voted = doneOf(yield* approveAs(people.first, halfway))
          const votes = new Map<string, unknown>()
          for (const { row } of [...rows.values(), { row: voted }]) votes.set(row.id, yield* repo.votes(row.id))
          return { people, rows, voted, votes }
        }).pipe(Effect.provide(stores.layer(kind)))

        yield* TestClock.adjust("1 minute")
        // A new process on the same database (same configuration key).
        yield* Effect.gen(function* () {
          const approvals = yield* Approvals
          const repo = yield* ApprovalRepo
          // Opening changes nothing by itself…
          for (const state of allStates)
            expect(yield* storedRow(before.rows.get(state)!.row.id)).toEqual(before.rows.get(state)!.row)
          yield* approvals.recover()
          const restartedAt = yield* now
          for (const state of allStates) {
            const { row } = before.rows.get(state)!
            const stored = yield* storedRow(row.id)
            if (state === "executing") {
              // …until recovery: an execution cut short has an unclear outcome.
              expect(stored).toEqual({ ...row, state: "unknown", finished_at: restartedAt, revision: row.revision + 1 })
            } else {
              expect(stored).toEqual(row)
            }
          }
          expect(yield* storedRow(before.voted.id)).toEqual(before.voted)
          for (const [id, votes] of before.votes) expect(yield* repo.votes(id)).toEqual(votes)

          // What was open still works with the same key; what finished stays finished.
          const { caller } = before.people.requester
          const pending = before.rows.get("pending")!
          expect(doneOf(yield* approveAs(before.people.first, pending.row)).state).toBe("approved")
          const approved = before.rows.get("approved")!
          const claimed = claimedOf(yield* approvals.claim(caller, approved.row.id))
          expect(claimed.intent.arguments).toEqual(approved.args)
          expect(doneOf(yield* approveAs(before.people.second, before.voted)).state).toBe("approved")
          const completed = before.rows.get("completed")!
          expect(yield* approvals.resultOf((yield* storedRow(completed.row.id))!)).toEqual({
            structuredContent: { deployed: completed.args["version"] }
          })
          for (const state of ["executing", "unknown", "completed", "expired"] as const) {
            const claim = yield* approvals.claim(caller, before.rows.get(state)!.row.id)
            expect(claim._tag).toBe("NotApproved")
          }
          expect(yield* storedRow(before.rows.get("executing")!.row.id)).toMatchObject({ state: "unknown" })
        }).pipe(Effect.provide(stores.open(storage)))
      })
  )

  it.scoped("the intent and the result are stored sealed: no argument or result value is in the row in clear", () =>
    Effect.gen(function* () {
      const approvals = yield* Approvals
      const sql = yield* SqlClient.SqlClient
      const people = yield* newPeople
      const args = {
        operation_id: "op-visible-nowhere-4411",
        environment: "eu-secret-region",
        version: "tiger-7731-hush",
        credentials: { token: "tok-99812-zz" }
      }
      const row = pendingOf(yield* requestWrite(people.requester.caller, args))
      const clearText = [args.operation_id, args.environment, args.version, args.credentials.token]
      const rawRow = JSON.stringify(yield* sql`SELECT * FROM approvals WHERE id = ${row.id}`)
      for (const value of clearText) expect(rawRow).not.toContain(value)
      const intent = (yield* approvals.intentOf(row))!
      expect(intent).toEqual({ arguments: args, metadata: { backend: "ops", tool: "deploy", client_id: "cli" } })
      expect(row.intent_hash).toBe(intentHash(intent))

      doneOf(yield* approveAs(people.first, row))
      const claimed = claimedOf(yield* approvals.claim(people.requester.caller, row.id))
      expect(claimed.intent).toEqual(intent)
      const result = { structuredContent: { receipt: "rcpt-5561-private" }, isError: false }
      const completed = yield* approvals.completed(claimed.row, result)
      expect(completed.state).toBe("completed")
      const finished = JSON.stringify(yield* sql`SELECT * FROM approvals WHERE id = ${row.id}`)
      for (const value of [...clearText, "rcpt-5561-private"]) expect(finished).not.toContain(value)
      expect(JSON.stringify(yield* sql`SELECT * FROM approval_votes`)).not.toContain(args.version)
      expect(yield* approvals.resultOf(completed)).toEqual(result)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  /** Ways a row can be altered in the database between the vote and the resume. */
  const tamperings: ReadonlyArray<{
    readonly name: string
    readonly alter: (row: ApprovalRow, other: ApprovalRow) => Effect.Effect<void, unknown, SqlClient.SqlClient>
  }> = [
    {
      name: "intent_hash was replaced by the hash of other arguments",
      alter: (row, other) =>
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`UPDATE approvals SET intent_hash = ${other.intent_hash} WHERE id = ${row.id}`
        )
    },
    {
      name: "intent_sealed had one character changed",
      alter: (row) =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => {
          const sealed = row.intent_sealed!
          const at = sealed.length - 5
          const flipped = `${sealed.slice(0, at)}${sealed[at] === "A" ? "B" : "A"}${sealed.slice(at + 1)}`
          return sql`UPDATE approvals SET intent_sealed = ${flipped} WHERE id = ${row.id}`
        })
    },
    {
      name: "intent_sealed and intent_hash were copied from another approval of the same requester",
      alter: (row, other) =>
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql`UPDATE approvals SET intent_sealed = ${other.intent_sealed}, intent_hash = ${other.intent_hash}
            WHERE id = ${row.id}`
        )
    },
    {
      name: "intent_sealed was removed",
      alter: (row) =>
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`UPDATE approvals SET intent_sealed = NULL WHERE id = ${row.id}`
        )
    }
  ]

  for (const tampering of tamperings) {
    it.scoped(
      `an approved row whose ${tampering.name} is never executed: the claim refuses and the state becomes unknown`,
      () =>
        Effect.gen(function* () {
          const approvals = yield* Approvals
          const people = yield* newPeople
          const { caller } = people.requester
          const approved = (yield* approvalIn(people, "approved", deployArgs("1.0"))).row
          const other = (yield* approvalIn(people, "pending", deployArgs("6.6.6"))).row
          yield* tampering.alter(approved, other)
          const claim = yield* approvals.claim(caller, approved.id)
          expect(claim._tag).toBe("NotApproved")
          if (claim._tag === "NotApproved") expect(claim.row.state).toBe("unknown")
          expect(yield* storedRow(approved.id)).toMatchObject({ state: "unknown" })
          // Never replayed: another resume, a status read or the sweep leave it unknown.
          expect((yield* approvals.claim(caller, approved.id))._tag).toBe("NotApproved")
          yield* approvals.sweep(approvalSettings)
          expect((yield* approvals.status(caller, approved.id))?.row.state).toBe("unknown")
          // The other approval is untouched.
          expect(yield* storedRow(other.id)).toEqual(other)
        }).pipe(Effect.provide(stores.layer(kind)))
    )
  }
})

describe.each(storeKinds)("the service under concurrency (%s)", (kind) => {
  const votersOf = (id: string) =>
    Effect.flatMap(ApprovalRepo, (repo) => repo.votes(id)).pipe(
      Effect.map((votes) => new Set(votes.map((vote) => vote.reviewer_id)))
    )

  it.scoped("two reviewers approving at once on a quorum of 2 reach approved exactly once, with 2 votes", () =>
    Effect.gen(function* () {
      const people = yield* newPeople
      const rows = yield* Effect.forEach(Array.from({ length: 4 }), () =>
        Effect.map(requestWrite(people.requester.caller, deployArgs(), { policy: twoReviews }), pendingOf)
      )
      const outcomes = yield* Effect.forEach(
        rows,
        (row) =>
          Effect.all([approveAs(people.first, row), approveAs(people.second, row)], { concurrency: "unbounded" }),
        { concurrency: "unbounded" }
      )
      for (const [index, pair] of outcomes.entries()) {
        const answered = pair.map(doneOf)
        expect(answered.filter((row) => row.state === "approved")).toHaveLength(1)
        expect(answered.filter((row) => row.state === "pending")).toHaveLength(1)
        const row = rows[index]!
        expect(yield* stateOf(row.id)).toBe("approved")
        expect(yield* votersOf(row.id)).toEqual(new Set([people.first.user.id, people.second.user.id]))
      }
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("of 10 concurrent resumes of one approved approval exactly one is Claimed", () =>
    Effect.gen(function* () {
      const approvals = yield* Approvals
      const people = yield* newPeople
      const { row, args } = yield* approvalIn(people, "approved")
      const claims = yield* Effect.forEach(
        Array.from({ length: 10 }),
        () => approvals.claim(people.requester.caller, row.id),
        { concurrency: "unbounded" }
      )
      const won = claims.filter((claim) => claim._tag === "Claimed")
      expect(won).toHaveLength(1)
      expect(claimedOf(won[0]!).intent.arguments).toEqual(args)
      expect(claims.filter((claim) => claim._tag === "NotApproved")).toHaveLength(9)
      expect(yield* stateOf(row.id)).toBe("executing")
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("a revoke and a resume at once: exactly one of them wins, and a revoked approval is never claimed", () =>
    Effect.gen(function* () {
      const approvals = yield* Approvals
      const people = yield* newPeople
      for (let round = 0; round < 4; round++) {
        const { row } = yield* approvalIn(people, "approved")
        const [revoked, claim] = yield* Effect.all(
          [approvals.revoke(people.second, row.id), approvals.claim(people.requester.caller, row.id)],
          { concurrency: "unbounded" }
        )
        const stored = yield* stateOf(row.id)
        if (claim._tag === "Claimed") {
          expect(revoked).toMatchObject({ _tag: "Refused", reason: "not_open" })
          expect(stored).toBe("executing")
        } else {
          expect(revoked).toMatchObject({ _tag: "Done", row: { state: "revoked" } })
          expect(claim).toMatchObject({ _tag: "NotApproved", row: { state: "revoked" } })
          expect(stored).toBe("revoked")
        }
      }
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("two concurrent requests with one operation id create one approval", () =>
    Effect.gen(function* () {
      const people = yield* newPeople
      const args = deployArgs()
      const [first, second] = yield* Effect.all(
        [requestWrite(people.requester.caller, args), requestWrite(people.requester.caller, args)],
        { concurrency: "unbounded" }
      )
      expect(pendingOf(first!).id).toBe(pendingOf(second!).id)
      expect([first, second].map((outcome) => outcome?._tag === "Pending" && outcome.created).sort()).toEqual([
        false,
        true
      ])
      expect(yield* countRows("1 = 1")).toBe(1)
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "of 25 concurrent requests with distinct operation ids by one subject exactly 20 are pending and 5 TooMany",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 25 }),
          () => requestWrite(people.requester.caller, deployArgs()),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((outcome) => outcome._tag === "Pending")).toHaveLength(20)
        expect(outcomes.filter((outcome) => outcome._tag === "TooMany")).toHaveLength(5)
        expect(yield* countRows("1 = 1")).toBe(20)
      }).pipe(Effect.provide(stores.layer(kind)))
  )
})
