/**
 * The life of a write approval through the Approvals service (src/approvals/service.ts), on SQLite and
 * PostgreSQL, with the real store, the real Sealer and reviewers who are real users holding the
 * approver role through real permission groups. Deadlines run on the TestClock.
 *
 *   pending             first vote, quorum 2               → pending (no execution deadline yet)
 *   pending             votes reach the quorum             → approved (execute_by = now + execute_within)
 *   pending             a reviewer rejects                 → rejected (operation id spent)
 *   pending, approved   a reviewer revokes                 → revoked
 *   approved            the resume claims it               → executing → completed (result sealed)
 *   pending, approved   the deadline passes                → expired (operation id spent)
 *   approved, executing the outcome is unclear             → unknown (never replayed)
 *   executing           the process restarts (recover)     → unknown
 *   executing           the write provably never left      → approved (same deadline)
 *   approved            a voter may no longer review       → pending (at the resume or the next vote)
 */
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Clock, type Context, Effect, ExecutionStrategy, Exit, Layer, Scope, TestClock } from "effect"
import { intentText } from "../../src/approvals/intent.js"
import type { StepUpEvidence } from "../../src/approvals/reviewers.js"
import { Approvals, type ReviewOutcome } from "../../src/approvals/service.js"
import { MAX_INTENT_BYTES } from "../../src/approvals/settings.js"
import { type ApprovalRow, ApprovalState } from "../../src/store/approvals.js"
import {
  approvalIn,
  approvalSettings,
  approveAs,
  callerOf,
  claimedOf,
  deployArgs,
  disableUser,
  doneOf,
  dropGroups,
  newBystander,
  newPeople,
  newRequester,
  newReviewer,
  type People,
  pendingOf,
  policyOf,
  requestWrite,
  reviewerOfUser,
  sharedApprovalStores,
  singleReview,
  stepUpReview,
  storedRow,
  storedState,
  twoReviews
} from "../support/approval-service.js"
import { storeKinds } from "../support/databases.js"

const stores = sharedApprovalStores()
afterAll(() => stores.close())

type Services = Layer.Layer.Success<ReturnType<typeof stores.layer>>

const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
const plus = (at: Date, ms: number) => new Date(at.getTime() + ms)
const { executeWithinMs, expiresAfterMs, retentionMs, stepUpMaxAgeMs } = approvalSettings

const refusalOf = (outcome: ReviewOutcome) => (outcome._tag === "Refused" ? outcome.reason : "done")
const votersOf = (id: string) =>
  Effect.flatMap(Approvals, (approvals) => approvals.detail(id)).pipe(
    Effect.map((detail) => (detail?.votes ?? []).map((vote) => vote.reviewer_id))
  )
const conflict = (state: string) => ({ _tag: "Conflict", message: expect.stringContaining(`(${state})`) })

interface Arranged {
  readonly row: ApprovalRow
  readonly args: Record<string, unknown>
}

/** One row of the state table: an approval in `from`, one event, and where it must be afterwards. */
interface Transition {
  readonly from: ApprovalState
  readonly event: string
  readonly to: ApprovalState
  readonly arrange: (people: People) => Effect.Effect<Arranged, unknown, Services>
  /** The event happens in a new process on the same database. */
  readonly restart?: boolean
  /** The event; the approval as the service answered (or, for the tick, as stored). */
  readonly act: (people: People, arranged: Arranged) => Effect.Effect<ApprovalRow, unknown, Services>
  /** What else the new state must mean. */
  readonly meaning?: (people: People, arranged: Arranged, after: ApprovalRow) => Effect.Effect<void, unknown, Services>
}

const requested = (people: People, policy = singleReview, args = deployArgs()) =>
  Effect.map(requestWrite(people.requester.caller, args, { policy }), (outcome) => ({
    row: pendingOf(outcome),
    args
  }))

/** A request with the same operation id and arguments: the id is spent once finished. */
const retry = (people: People, arranged: Arranged) => requestWrite(people.requester.caller, arranged.args)

const claimOf = (people: People, id: string) =>
  Effect.flatMap(Approvals, (approvals) => approvals.claim(people.requester.caller, id))

const transitions: ReadonlyArray<Transition> = [
  {
    from: "pending",
    event: "the first vote of a quorum of 2 (the execution deadline does not start)",
    to: "pending",
    arrange: (people) => requested(people, twoReviews),
    act: (people, { row }) => Effect.map(approveAs(people.first, row), doneOf),
    meaning: (people, { row }, after) =>
      Effect.gen(function* () {
        expect(after).toMatchObject({ approved_at: null, execute_by: null, finished_at: null })
        expect(yield* votersOf(row.id)).toEqual([people.first.user.id])
        // No execution deadline runs: past execute_within it is still pending (it waits up to expires_after).
        yield* TestClock.adjust(executeWithinMs + 1)
        expect((yield* (yield* Approvals).status(people.requester.caller, row.id))?.row.state).toBe("pending")
      })
  },
  {
    from: "pending",
    event: "a second distinct reviewer's vote reaches the quorum of 2 (the execution deadline starts)",
    to: "approved",
    arrange: (people) =>
      Effect.gen(function* () {
        const arranged = yield* requested(people, twoReviews)
        doneOf(yield* approveAs(people.first, arranged.row))
        yield* TestClock.adjust("5 minutes")
        return arranged
      }),
    act: (people, { row }) => Effect.map(approveAs(people.second, row), doneOf),
    meaning: (people, { row }, after) =>
      Effect.gen(function* () {
        const at = yield* now
        // Counted from the vote that reached the quorum, not from the request or the first vote.
        expect(after).toMatchObject({ approved_at: at, execute_by: plus(at, executeWithinMs) })
        expect(new Set(yield* votersOf(row.id))).toEqual(new Set([people.first.user.id, people.second.user.id]))
      })
  },
  {
    from: "pending",
    event: "the one vote of a quorum of 1",
    to: "approved",
    arrange: (people) => requested(people),
    act: (people, { row }) => Effect.map(approveAs(people.first, row), doneOf),
    meaning: (_, __, after) =>
      Effect.gen(function* () {
        const at = yield* now
        expect(after).toMatchObject({ approved_at: at, execute_by: plus(at, executeWithinMs) })
      })
  },
  {
    from: "pending",
    event: "a reviewer rejects (the operation id is never usable again)",
    to: "rejected",
    arrange: (people) => requested(people),
    act: (people, { row }) =>
      Effect.map(
        Effect.flatMap(Approvals, (a) => a.reject(people.first, row.id)),
        doneOf
      ),
    meaning: (people, arranged, after) =>
      Effect.gen(function* () {
        expect(after).toMatchObject({ decided_by: people.first.user.id, finished_at: yield* now })
        expect(yield* retry(people, arranged)).toEqual(conflict("rejected"))
        expect(refusalOf(yield* approveAs(people.second, arranged.row))).toBe("not_pending")
        expect((yield* claimOf(people, arranged.row.id))._tag).toBe("NotApproved")
      })
  },
  {
    from: "pending",
    event: "a reviewer revokes it",
    to: "revoked",
    arrange: (people) => requested(people),
    act: (people, { row }) =>
      Effect.map(
        Effect.flatMap(Approvals, (a) => a.revoke(people.second, row.id)),
        doneOf
      ),
    meaning: (people, arranged, after) =>
      Effect.gen(function* () {
        expect(after).toMatchObject({ decided_by: people.second.user.id, finished_at: yield* now })
        expect(yield* retry(people, arranged)).toEqual(conflict("revoked"))
      })
  },
  {
    from: "approved",
    event: "a reviewer revokes it before execution",
    to: "revoked",
    arrange: (people) => approvalIn(people, "approved"),
    act: (people, { row }) =>
      Effect.map(
        Effect.flatMap(Approvals, (a) => a.revoke(people.second, row.id)),
        doneOf
      ),
    meaning: (people, arranged, after) =>
      Effect.gen(function* () {
        expect(after.decided_by).toBe(people.second.user.id)
        const claim = yield* claimOf(people, arranged.row.id)
        expect(claim).toMatchObject({ _tag: "NotApproved", row: { state: "revoked" } })
        expect(yield* retry(people, arranged)).toEqual(conflict("revoked"))
      })
  },
  {
    from: "approved",
    event: "the requester's resume claims it, with the reviewed intent",
    to: "executing",
    arrange: (people) => approvalIn(people, "approved"),
    act: (people, { row }) => Effect.map(claimOf(people, row.id), (claim) => claimedOf(claim).row),
    meaning: (people, arranged) =>
      Effect.gen(function* () {
        const stored = (yield* storedRow(arranged.row.id))!
        expect(yield* (yield* Approvals).intentOf(stored)).toEqual({
          arguments: arranged.args,
          metadata: { backend: "ops", tool: "deploy", client_id: "cli" }
        })
        // One resume only; a retry of the request is still the same approval.
        expect((yield* claimOf(people, arranged.row.id))._tag).toBe("NotApproved")
        expect(yield* retry(people, arranged)).toMatchObject({
          _tag: "Pending",
          created: false,
          row: { id: arranged.row.id, state: "executing" }
        })
      })
  },
  {
    from: "executing",
    event: "the write answered: its result is cached, sealed",
    to: "completed",
    arrange: (people) => approvalIn(people, "executing"),
    act: (_, { row }) =>
      Effect.flatMap(Approvals, (a) =>
        a.completed(row, { content: [{ type: "text", text: "done-4711" }], structuredContent: { receipt: "r-4711" } })
      ),
    meaning: (people, arranged, after) =>
      Effect.gen(function* () {
        expect(after.finished_at).toEqual(yield* now)
        expect(after.result_sealed).not.toBeNull()
        expect(after.result_sealed).not.toContain("4711")
        expect(yield* (yield* Approvals).resultOf(after)).toEqual({
          content: [{ type: "text", text: "done-4711" }],
          structuredContent: { receipt: "r-4711" }
        })
        expect((yield* claimOf(people, arranged.row.id))._tag).toBe("NotApproved")
        expect(yield* retry(people, arranged)).toEqual(conflict("completed"))
      })
  },
  {
    from: "pending",
    event: "expires_after passes (the maintenance sweep; the operation id is spent)",
    to: "expired",
    arrange: (people) => requested(people),
    act: (_, { row }) =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        yield* TestClock.adjust(expiresAfterMs - 1)
        // A millisecond before its expiry: still pending, and reminded of it (docs/approvals.md, "Approval events").
        expect(yield* approvals.sweep(approvalSettings)).toEqual({ expired: 0, reminded: 1, dropped: 0 })
        expect(yield* storedState(row.id)).toBe("pending")
        yield* TestClock.adjust(1)
        expect(yield* approvals.sweep(approvalSettings)).toEqual({ expired: 1, reminded: 0, dropped: 0 })
        return (yield* storedRow(row.id))!
      }),
    meaning: (people, arranged, after) =>
      Effect.gen(function* () {
        expect(after.finished_at).toEqual(yield* now)
        expect(yield* retry(people, arranged)).toEqual(conflict("expired"))
        expect(refusalOf(yield* approveAs(people.first, arranged.row))).toBe("not_pending")
      })
  },
  {
    from: "pending",
    event: "expires_after passes (seen by the requester's status read before any sweep)",
    to: "expired",
    arrange: (people) => requested(people),
    act: (people, { row }) =>
      Effect.gen(function* () {
        yield* TestClock.adjust(expiresAfterMs)
        return (yield* (yield* Approvals).status(people.requester.caller, row.id))!.row
      })
  },
  {
    from: "approved",
    event: "execute_within passes before the resume (the operation id is spent)",
    to: "expired",
    arrange: (people) => approvalIn(people, "approved"),
    act: (people, { row }) =>
      Effect.gen(function* () {
        yield* TestClock.adjust(executeWithinMs)
        const claim = yield* claimOf(people, row.id)
        expect(claim._tag).toBe("NotApproved")
        return claim._tag === "NotApproved" ? claim.row : row
      }),
    meaning: (people, arranged) =>
      Effect.map(retry(people, arranged), (outcome) => expect(outcome).toEqual(conflict("expired")))
  },
  {
    from: "approved",
    event: "the resume cannot verify the reviewed intent (altered in the store): nothing is executed",
    to: "unknown",
    arrange: (people) => approvalIn(people, "approved"),
    act: (people, { row }) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE approvals SET intent_hash = ${"0".repeat(64)} WHERE id = ${row.id}`
        const claim = yield* claimOf(people, row.id)
        expect(claim._tag).toBe("NotApproved")
        return claim._tag === "NotApproved" ? claim.row : row
      })
  },
  {
    from: "executing",
    event: "the write's outcome is unclear (no status read resets it; never replayed)",
    to: "unknown",
    arrange: (people) => approvalIn(people, "executing"),
    act: (_, { row }) => Effect.flatMap(Approvals, (a) => a.unknownOutcome(row, "timeout")),
    meaning: (people, arranged) =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        yield* TestClock.adjust(expiresAfterMs + executeWithinMs)
        yield* approvals.sweep(approvalSettings)
        expect((yield* approvals.status(people.requester.caller, arranged.row.id))?.row.state).toBe("unknown")
        expect((yield* approvals.detail(arranged.row.id))?.row.state).toBe("unknown")
        expect((yield* claimOf(people, arranged.row.id))._tag).toBe("NotApproved")
        expect(yield* retry(people, arranged)).toEqual(conflict("unknown"))
        expect(yield* storedState(arranged.row.id)).toBe("unknown")
      })
  },
  {
    from: "executing",
    event: "the process restarts mid-execution (recover)",
    to: "unknown",
    arrange: (people) => approvalIn(people, "executing"),
    restart: true,
    act: (_, { row }) =>
      Effect.gen(function* () {
        yield* (yield* Approvals).recover()
        return (yield* storedRow(row.id))!
      }),
    meaning: (people, arranged) =>
      Effect.map(claimOf(people, arranged.row.id), (claim) => expect(claim._tag).toBe("NotApproved"))
  },
  {
    from: "executing",
    event: "the write provably never reached the backend (approved again, within its deadline)",
    to: "approved",
    arrange: (people) => approvalIn(people, "executing"),
    act: (_, { row }) =>
      Effect.gen(function* () {
        yield* (yield* Approvals).notSent(row)
        return (yield* storedRow(row.id))!
      }),
    meaning: (people, arranged, after) =>
      Effect.gen(function* () {
        expect(after.execute_by).toEqual(arranged.row.execute_by)
        expect(claimedOf(yield* claimOf(people, arranged.row.id)).row.state).toBe("executing")
      })
  }
]

describe.each(storeKinds)("write approval transitions (%s)", (kind) => {
  for (const transition of transitions) {
    it.scoped(`${transition.from} → ${transition.to}: ${transition.event}`, () =>
      Effect.gen(function* () {
        const storage = yield* stores.storage(kind)
        const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
        let context: Context.Context<Services> = yield* Layer.buildWithScope(stores.layer(kind), scope)
        const { people, arranged } = yield* Effect.gen(function* () {
          const people = yield* newPeople
          const arranged = yield* transition.arrange(people)
          expect(arranged.row.state).toBe(transition.from)
          expect(yield* storedState(arranged.row.id)).toBe(transition.from)
          return { people, arranged }
        }).pipe(Effect.provide(context))
        if (transition.restart === true) {
          yield* Scope.close(scope, Exit.void)
          const next = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
          context = yield* Layer.buildWithScope(stores.open(storage), next)
        }
        yield* Effect.gen(function* () {
          const after = yield* transition.act(people, arranged)
          expect(after.id).toBe(arranged.row.id)
          expect(after.state).toBe(transition.to)
          expect(yield* storedState(arranged.row.id)).toBe(transition.to)
          if (transition.meaning !== undefined) yield* transition.meaning(people, arranged, after)
        }).pipe(Effect.provide(context))
      })
    )
  }

  it.scoped("no event the table does not list moves an approval: each refused attempt leaves the row as it was", () =>
    Effect.gen(function* () {
      const approvals = yield* Approvals
      const people = yield* newPeople
      const { caller } = people.requester
      const allowed: Record<string, ReadonlyArray<ApprovalState>> = {
        approve: ["pending"],
        reject: ["pending"],
        revoke: ["pending", "approved"],
        claim: ["approved"]
      }
      const attempts = {
        approve: (row: ApprovalRow) => Effect.map(approveAs(people.second, row), refusalOf),
        reject: (row: ApprovalRow) => Effect.map(approvals.reject(people.second, row.id), refusalOf),
        revoke: (row: ApprovalRow) => Effect.map(approvals.revoke(people.second, row.id), refusalOf),
        claim: (row: ApprovalRow) => Effect.map(approvals.claim(caller, row.id), (claim) => claim._tag)
      }
      const states = ApprovalState.literals
      const refused: Array<string> = []
      for (const state of states) {
        const { row } = yield* approvalIn(people, state)
        for (const [action, attempt] of Object.entries(attempts)) {
          if (allowed[action]!.includes(state)) continue
          const answer = yield* attempt(row)
          refused.push(`${state}:${action}:${answer}`)
          expect(yield* storedRow(row.id)).toEqual(row)
        }
      }
      expect(refused).toEqual([
        "pending:claim:NotApproved",
        "approved:approve:not_pending",
        "approved:reject:not_open",
        "executing:approve:not_pending",
        "executing:reject:not_open",
        "executing:revoke:not_open",
        "executing:claim:NotApproved",
        ...["completed", "rejected", "revoked", "expired", "unknown"].flatMap((state) => [
          `${state}:approve:not_pending`,
          `${state}:reject:not_open`,
          `${state}:revoke:not_open`,
          `${state}:claim:NotApproved`
        ])
      ])
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "only the requester, through the client that asked, sees and resumes an approval: anyone else finds nothing and it stays approved",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const people = yield* newPeople
        const { row } = yield* approvalIn(people, "approved")
        const { userId } = people.requester
        const strangers = [
          (yield* newRequester()).caller,
          callerOf(userId, "cli", "https://other-issuer.example.com"),
          callerOf(userId, "other-client"),
          callerOf(userId, null)
        ]
        for (const stranger of strangers) {
          expect(yield* approvals.claim(stranger, row.id)).toEqual({ _tag: "NotFound" })
        }
        expect(yield* approvals.status((yield* newRequester()).caller, row.id)).toBeUndefined()
        expect(yield* storedRow(row.id)).toEqual(row)
        expect(yield* approvals.claim(people.requester.caller, "apr_missing")).toEqual({ _tag: "NotFound" })
        expect(claimedOf(yield* approvals.claim(people.requester.caller, row.id)).row.state).toBe("executing")
      }).pipe(Effect.provide(stores.layer(kind)))
  )
})

describe.each(storeKinds)("reviewers (%s)", (kind) => {
  it.scoped(
    "votes stop counting once their reviewer may no longer review: a quorum needs another vote, and an approved write goes back to pending at the resume instead of running",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const people = yield* newPeople
        const third = yield* newReviewer
        // Quorum 2: the first voter leaves the approver role's group before the second vote.
        const { row } = yield* requested(people, twoReviews)
        doneOf(yield* approveAs(people.first, row))
        yield* dropGroups(people.first.user.id)
        expect(doneOf(yield* approveAs(people.second, row))).toMatchObject({ state: "pending", execute_by: null })
        expect(yield* votersOf(row.id)).toEqual([people.second.user.id])
        expect(doneOf(yield* approveAs(third, row)).state).toBe("approved")

        // Approved by a reviewer who is then disabled: the resume claims nothing.
        const others = yield* newPeople
        const approved = (yield* approvalIn(others, "approved")).row
        yield* disableUser(others.first.user.id)
        const claim = yield* approvals.claim(others.requester.caller, approved.id)
        expect(claim).toMatchObject({
          _tag: "NotApproved",
          row: { state: "pending", approved_at: null, execute_by: null }
        })
        expect(yield* storedState(approved.id)).toBe("pending")
        expect(yield* votersOf(approved.id)).toEqual([])
        // A reviewer who still may review approves it again.
        expect(doneOf(yield* approveAs(others.second, approved)).state).toBe("approved")
        expect(claimedOf(yield* approvals.claim(others.requester.caller, approved.id)).row.state).toBe("executing")
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "quorum 2: the first vote leaves it pending with execute_by null; the same reviewer again is already_voted; a second distinct reviewer approves it with execute_by = now + execute_within",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const { row } = yield* requested(people, twoReviews)
        expect(row).toMatchObject({ required_approvals: 2, require_step_up: false, risk: "base" })
        yield* TestClock.adjust("1 minute")
        const first = doneOf(yield* approveAs(people.first, row))
        expect(first).toMatchObject({ state: "pending", execute_by: null, approved_at: null })
        yield* TestClock.adjust("1 minute")
        expect(refusalOf(yield* approveAs(people.first, row))).toBe("already_voted")
        expect(yield* votersOf(row.id)).toEqual([people.first.user.id])
        yield* TestClock.adjust("1 minute")
        const at = yield* now
        const second = doneOf(yield* approveAs(people.second, row))
        expect(second).toMatchObject({ state: "approved", approved_at: at, execute_by: plus(at, executeWithinMs) })
        expect(yield* votersOf(row.id)).toEqual([people.first.user.id, people.second.user.id])
        // A third reviewer finds nothing left to vote on.
        expect(refusalOf(yield* approveAs(yield* newReviewer, row))).toBe("not_pending")
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "the requester cannot approve their own request even holding the approver role (self_approval): a quorum of 2 still needs two others; they may reject it",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const people = yield* newPeople
        const requester = yield* newRequester({ approver: true })
        const self = yield* reviewerOfUser(requester.userId)
        expect(self.approver).toBe(true)
        const row = pendingOf(yield* requestWrite(requester.caller, deployArgs(), { policy: twoReviews }))
        expect(refusalOf(yield* approveAs(self, row))).toBe("self_approval")
        expect(yield* votersOf(row.id)).toEqual([])
        expect(doneOf(yield* approveAs(people.first, row)).state).toBe("pending")
        expect(refusalOf(yield* approveAs(self, row))).toBe("self_approval")
        expect(doneOf(yield* approveAs(people.second, row)).state).toBe("approved")
        expect(yield* votersOf(row.id)).not.toContain(requester.userId)
        // Stopping one's own request is allowed.
        const other = pendingOf(yield* requestWrite(requester.caller, deployArgs()))
        expect(doneOf(yield* approvals.reject(self, other.id))).toMatchObject({
          state: "rejected",
          decided_by: requester.userId
        })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "only people holding the approver role now review, and a rule's approvers list admits only those listed: to anyone else the approval is not_found, as an unknown one",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const people = yield* newPeople
        const { row } = yield* requested(people)
        const bystander = yield* newBystander
        expect(bystander.approver).toBe(false)
        expect(refusalOf(yield* approveAs(bystander, row))).toBe("not_found")
        expect(refusalOf(yield* approvals.reject(bystander, row.id))).toBe("not_found")
        expect(refusalOf(yield* approvals.revoke(bystander, row.id))).toBe("not_found")
        const leaving = yield* newReviewer
        expect(leaving.approver).toBe(true)
        yield* disableUser(leaving.user.id)
        const disabled = yield* reviewerOfUser(leaving.user.id)
        expect(disabled.approver).toBe(false)
        expect(refusalOf(yield* approveAs(disabled, row))).toBe("not_found")
        expect(yield* storedRow(row.id)).toEqual(row)

        // Named reviewers: by user id, or a local account as `local:<username>` (not its bare username).
        const byName = `local:${people.second.user.username}`
        const named = policyOf({
          operation_id_argument: "/operation_id",
          approvers: [{ subjects: [people.first.user.id] }, { subjects: [byName] }]
        })
        const listed = pendingOf(yield* requestWrite(people.requester.caller, deployArgs(), { policy: named }))
        expect(listed.approvers).toEqual([people.first.user.id, byName])
        const outsider = yield* newReviewer
        expect(refusalOf(yield* approveAs(outsider, listed))).toBe("not_found")
        expect(refusalOf(yield* approvals.reject(outsider, listed.id))).toBe("not_found")
        expect(doneOf(yield* approveAs(people.second, listed)).state).toBe("approved")
        // A bare username names nobody (it could be an enterprise subject elsewhere).
        const bare = policyOf({
          operation_id_argument: "/operation_id",
          approvers: [{ subjects: [people.first.user.username!] }]
        })
        const unnamed = pendingOf(yield* requestWrite(people.requester.caller, deployArgs(), { policy: bare }))
        expect(refusalOf(yield* approveAs(people.first, unnamed))).toBe("not_found")
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "a vote counts only for the intent the review page showed (intent_changed), and not for an unknown approval",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const people = yield* newPeople
        const { row } = yield* requested(people)
        const other = (yield* requested(people, singleReview, deployArgs("9.9"))).row
        const outcome = yield* approvals.approve(people.first, row.id, other.intent_hash, undefined, approvalSettings)
        expect(refusalOf(outcome)).toBe("intent_changed")
        expect(yield* storedRow(row.id)).toEqual(row)
        expect(yield* votersOf(row.id)).toEqual([])
        const missing = yield* approvals.approve(
          people.first,
          "apr_missing",
          row.intent_hash,
          undefined,
          approvalSettings
        )
        expect(refusalOf(missing)).toBe("not_found")
        expect(refusalOf(yield* approvals.reject(people.first, "apr_missing"))).toBe("not_found")
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("a vote after expires_after passed is refused and records nothing", () =>
    Effect.gen(function* () {
      const people = yield* newPeople
      const { row } = yield* requested(people, twoReviews)
      yield* TestClock.adjust(expiresAfterMs)
      expect(refusalOf(yield* approveAs(people.first, row))).toBe("not_pending")
      expect(yield* storedState(row.id)).toBe("expired")
      expect(yield* votersOf(row.id)).toEqual([])
    }).pipe(Effect.provide(stores.layer(kind)))
  )
})

/** Step-up evidence relative to the vote's time, for the approval voted on unless `approvalId` says otherwise. */
interface StepUpCase {
  readonly name: string
  readonly evidence: (at: number, approvalId: string) => StepUpEvidence | undefined
  readonly counted: boolean
}

const stepUpCases: ReadonlyArray<StepUpCase> = [
  { name: "missing", evidence: () => undefined, counted: false },
  {
    name: "stale (older than step_up.max_age)",
    evidence: (at, approvalId) => ({ approvalId, acr: "phr", authTime: at - stepUpMaxAgeMs - 1 }),
    counted: false
  },
  {
    name: "with an acr not among step_up.acr_values",
    evidence: (at, approvalId) => ({ approvalId, acr: "pwd", authTime: at - 1000 }),
    counted: false
  },
  {
    name: "given for another approval",
    evidence: (at) => ({ approvalId: "apr_another", acr: "phr", authTime: at - 1000 }),
    counted: false
  },
  {
    name: "fresh, with an accepted acr",
    evidence: (at, approvalId) => ({ approvalId, acr: "phr", authTime: at - 60_000 }),
    counted: true
  },
  {
    name: "exactly step_up.max_age old, with another accepted acr",
    evidence: (at, approvalId) => ({ approvalId, acr: "urn:mfa", authTime: at - stepUpMaxAgeMs }),
    counted: true
  }
]

describe.each(storeKinds)("step-up (%s)", (kind) => {
  for (const stepUp of stepUpCases) {
    it.scoped(
      `a step-up ${stepUp.name} is ${stepUp.counted ? "counted with its acr and time" : "refused (step_up_required) and nothing is recorded"}`,
      () =>
        Effect.gen(function* () {
          const approvals = yield* Approvals
          const people = yield* newPeople
          yield* TestClock.adjust("1 hour")
          const { row } = yield* requested(people, stepUpReview)
          expect(row.require_step_up).toBe(true)
          yield* TestClock.adjust("2 minutes")
          const at = yield* Clock.currentTimeMillis
          const evidence = stepUp.evidence(at, row.id)
          const outcome = yield* approveAs(people.first, row, evidence)
          if (stepUp.counted) {
            expect(doneOf(outcome).state).toBe("approved")
            const detail = (yield* approvals.detail(row.id))!
            expect(detail.votes).toMatchObject([
              {
                reviewer_id: people.first.user.id,
                step_up_acr: evidence!.acr,
                step_up_at: new Date(evidence!.authTime)
              }
            ])
          } else {
            expect(refusalOf(outcome)).toBe("step_up_required")
            expect(yield* storedRow(row.id)).toEqual(row)
            expect(yield* votersOf(row.id)).toEqual([])
          }
        }).pipe(Effect.provide(stores.layer(kind)))
    )
  }

  it.scoped(
    "a risk rule that holds raises one call to a quorum of 2 with step-up; each vote needs its own step-up",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const policy = policyOf({
          operation_id_argument: "/operation_id",
          risk_rules: [
            {
              resources: [{ argument: "/environment", allowed_values: ["production"] }],
              required_approvals: 2,
              require_step_up: true
            }
          ]
        })
        const staging = pendingOf(yield* requestWrite(people.requester.caller, deployArgs(), { policy }))
        expect(staging).toMatchObject({ required_approvals: 1, require_step_up: false, risk: "base" })
        const production = pendingOf(
          yield* requestWrite(
            people.requester.caller,
            { ...deployArgs(), environment: "production" },
            {
              policy
            }
          )
        )
        expect(production).toMatchObject({
          required_approvals: 2,
          require_step_up: true,
          risk: "raised by risk rule 0"
        })
        const at = yield* Clock.currentTimeMillis
        const fresh = { approvalId: production.id, acr: "phr", authTime: at }
        expect(refusalOf(yield* approveAs(people.first, production))).toBe("step_up_required")
        expect(doneOf(yield* approveAs(people.first, production, fresh)).state).toBe("pending")
        expect(refusalOf(yield* approveAs(people.second, production))).toBe("step_up_required")
        expect(doneOf(yield* approveAs(people.second, production, fresh)).state).toBe("approved")
        expect(doneOf(yield* approveAs(people.first, staging)).state).toBe("approved")
      }).pipe(Effect.provide(stores.layer(kind)))
  )
})

describe.each(storeKinds)("operation ids (%s)", (kind) => {
  it.scoped(
    "a retry with the same operation id and arguments, in any key order, is the same approval while pending, approved or executing",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const { caller } = people.requester
        const id = `op-retry-${kind}`
        const args = { operation_id: id, environment: "staging", options: { force: false, tags: ["a", "b"] } }
        const first = yield* requestWrite(caller, args)
        expect(first).toMatchObject({ _tag: "Pending", created: true })
        const row = pendingOf(first)
        const reordered = { options: { tags: ["a", "b"], force: false }, environment: "staging", operation_id: id }
        expect(yield* requestWrite(caller, reordered)).toEqual({ _tag: "Pending", created: false, row })
        const approved = doneOf(yield* approveAs(people.first, row))
        expect(yield* requestWrite(caller, args)).toEqual({ _tag: "Pending", created: false, row: approved })
        const executing = claimedOf(yield* claimOf(people, row.id)).row
        expect(yield* requestWrite(caller, args)).toEqual({ _tag: "Pending", created: false, row: executing })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "the same operation id with other arguments, or through another client of the same subject, is a Conflict and changes nothing",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const { caller } = people.requester
        const args = deployArgs("1.0")
        const row = pendingOf(yield* requestWrite(caller, args))
        const different = { _tag: "Conflict", message: expect.stringContaining("different arguments") }
        expect(yield* requestWrite(caller, { ...args, version: "1.1" })).toEqual(different)
        expect(yield* requestWrite(caller, { ...args, extra: true })).toEqual(different)
        expect(yield* requestWrite(caller, { ...args, version: 1 })).toEqual(different)
        // The client is part of the intent's metadata.
        expect(yield* requestWrite(callerOf(people.requester.userId, "other-client"), args)).toEqual(different)
        expect(yield* requestWrite(callerOf(people.requester.userId, null), args)).toEqual(different)
        expect(yield* storedRow(row.id)).toEqual(row)
        expect(yield* requestWrite(caller, args)).toMatchObject({
          _tag: "Pending",
          created: false,
          row: { id: row.id }
        })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "an operation id whose approval finished is a Conflict even with the same arguments: completed, rejected, revoked, expired, unknown",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        for (const state of ["completed", "rejected", "revoked", "expired", "unknown"] as const) {
          const { row, args } = yield* approvalIn(people, state)
          expect(yield* requestWrite(people.requester.caller, args)).toEqual(conflict(state))
          expect(yield* requestWrite(people.requester.caller, { ...args, version: "other" })).toMatchObject({
            _tag: "Conflict"
          })
          expect(yield* storedRow(row.id)).toEqual(row)
        }
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "retention drops a finished approval older than the retention but its tombstone keeps the operation id spent",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const sql = yield* SqlClient.SqlClient
        const people = yield* newPeople
        const { caller } = people.requester
        const { row, args } = yield* approvalIn(people, "rejected")
        const waiting = pendingOf(
          yield* requestWrite(caller, deployArgs(), {
            settings: { ...approvalSettings, expiresAfterMs: 2 * retentionMs }
          })
        )
        yield* TestClock.adjust(retentionMs)
        const recent = yield* approvalIn(people, "revoked")
        expect(yield* approvals.sweep(approvalSettings)).toEqual({ expired: 0, reminded: 0, dropped: 0 })
        yield* TestClock.adjust(1)
        expect(yield* approvals.sweep(approvalSettings)).toEqual({ expired: 0, reminded: 0, dropped: 1 })
        expect(yield* storedRow(row.id)).toBeUndefined()
        expect(yield* approvals.status(caller, row.id)).toBeUndefined()
        expect(yield* sql`SELECT state FROM approval_tombstones WHERE operation_key = ${row.operation_key}`).toEqual([
          { state: "rejected" }
        ])
        // Spent: with the same arguments and with others.
        expect(yield* requestWrite(caller, args)).toEqual(conflict("rejected"))
        expect(yield* requestWrite(caller, { ...args, version: "2.0" })).toEqual(conflict("rejected"))
        // Unfinished approvals and finished ones within the retention stay.
        expect(yield* storedState(waiting.id)).toBe("pending")
        expect(yield* storedState(recent.row.id)).toBe("revoked")
        expect(yield* requestWrite(caller, recent.args)).toEqual(conflict("revoked"))
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("the same operation id from another subject, issuer, backend or tool is a separate approval", () =>
    Effect.gen(function* () {
      const people = yield* newPeople
      const other = yield* newRequester()
      const args = deployArgs()
      const { caller } = people.requester
      const outcomes = [
        yield* requestWrite(caller, args),
        yield* requestWrite(other.caller, args),
        yield* requestWrite(callerOf(people.requester.userId, "cli", "https://other-issuer.example.com"), args),
        yield* requestWrite(caller, args, { backend: "billing" }),
        yield* requestWrite(caller, args, { tool: "rollback" })
      ]
      const rows = outcomes.map(pendingOf)
      expect(outcomes.map((outcome) => outcome._tag === "Pending" && outcome.created)).toEqual([
        true,
        true,
        true,
        true,
        true
      ])
      expect(new Set(rows.map((row) => row.id)).size).toBe(5)
      expect(new Set(rows.map((row) => row.operation_key)).size).toBe(5)
      // Each is its own: rejecting one leaves the others pending and retryable.
      doneOf(yield* (yield* Approvals).reject(people.first, rows[0]!.id))
      expect(yield* requestWrite(other.caller, args)).toMatchObject({ _tag: "Pending", created: false })
      expect(yield* requestWrite(caller, args, { tool: "rollback" })).toMatchObject({
        _tag: "Pending",
        row: { id: rows[4]!.id }
      })
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "an operation id that is missing, not a string, empty, too long or has other characters is Invalid and stores nothing",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const sql = yield* SqlClient.SqlClient
        const hostile: ReadonlyArray<Record<string, unknown>> = [
          { environment: "staging" },
          { operation_id: 42 },
          { operation_id: null },
          { operation_id: ["op-1"] },
          { operation_id: "" },
          { operation_id: "a".repeat(129) },
          { operation_id: "../../etc/passwd" },
          { operation_id: "op é" },
          { operation_id: "op-\u0000" },
          { operation_id: "op-1\n" }
        ]
        for (const args of hostile) {
          expect(yield* requestWrite(people.requester.caller, args)).toEqual({
            _tag: "Invalid",
            message: expect.stringContaining("/operation_id")
          })
        }
        expect(yield* sql`SELECT id FROM approvals`).toEqual([])
        // The longest allowed id is accepted.
        expect(yield* requestWrite(people.requester.caller, { operation_id: "a".repeat(128) })).toMatchObject({
          _tag: "Pending",
          created: true
        })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "an intent larger than 64 KiB (in bytes) is TooLarge and stores nothing; one at the limit is accepted",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const sql = yield* SqlClient.SqlClient
        const { caller } = people.requester
        const args = (payload: string, n = 0) => ({ operation_id: `op-large-${n}`, payload })
        // The intent's size: its canonical text, with the metadata (backend, tool, client).
        const sizeOf = (payload: string) =>
          Buffer.byteLength(
            intentText({ arguments: args(payload), metadata: { backend: "ops", tool: "deploy", client_id: "cli" } })
          )
        const fits = "x".repeat(MAX_INTENT_BYTES - sizeOf(""))
        expect(sizeOf(fits)).toBe(MAX_INTENT_BYTES)
        expect(yield* requestWrite(caller, args(`${fits}x`, 1))).toEqual({ _tag: "TooLarge" })
        // Bytes, not characters: half as many two-byte characters do not fit either.
        expect(yield* requestWrite(caller, args("é".repeat(Math.ceil(fits.length / 2) + 1), 2))).toEqual({
          _tag: "TooLarge"
        })
        expect(yield* sql`SELECT id FROM approvals`).toEqual([])
        expect(yield* requestWrite(caller, args(fits, 3))).toMatchObject({ _tag: "Pending", created: true })
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("without an operation_id_argument every request is a new approval", () =>
    Effect.gen(function* () {
      const people = yield* newPeople
      const policy = policyOf({})
      const args = { environment: "staging" }
      const first = pendingOf(yield* requestWrite(people.requester.caller, args, { policy }))
      const second = pendingOf(yield* requestWrite(people.requester.caller, args, { policy }))
      expect(first.id).not.toBe(second.id)
      expect(first.operation_key).toBeNull()
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "at most 20 active approvals per issuer and subject: the 21st is TooMany, a retry is still answered, a finished one frees a place",
    () =>
      Effect.gen(function* () {
        const approvals = yield* Approvals
        const people = yield* newPeople
        const { caller } = people.requester
        const rows: Array<ApprovalRow> = []
        const firstArgs = deployArgs()
        rows.push(pendingOf(yield* requestWrite(caller, firstArgs)))
        doneOf(yield* approveAs(people.first, rows[0]!))
        for (let index = 1; index < 20; index++) rows.push(pendingOf(yield* requestWrite(caller, deployArgs())))
        expect(yield* requestWrite(caller, deployArgs())).toEqual({ _tag: "TooMany" })
        expect(yield* requestWrite(caller, firstArgs)).toMatchObject({ _tag: "Pending", created: false })
        // Another subject, and the same subject of another issuer, count on their own.
        expect((yield* requestWrite((yield* newRequester()).caller, deployArgs()))._tag).toBe("Pending")
        expect(
          (yield* requestWrite(callerOf(people.requester.userId, "cli", "https://other.example.com"), deployArgs()))
            ._tag
        ).toBe("Pending")
        doneOf(yield* approvals.reject(people.first, rows[5]!.id))
        expect((yield* requestWrite(caller, deployArgs()))._tag).toBe("Pending")
        expect(yield* requestWrite(caller, deployArgs())).toEqual({ _tag: "TooMany" })
      }).pipe(Effect.provide(stores.layer(kind)))
  )
})
