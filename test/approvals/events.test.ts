/**
 * The approval event outbox (src/store/approval-events.ts) on SQLite and PostgreSQL: every change of an
 * approval's state writes its event in the transaction of the change (a change that rolls back leaves
 * none; a committed one is there for the next process), the events carry no argument, result or
 * secret, the minute tick writes one reminder per deadline, and `seq` commits in order however the
 * transitions interleave.
 */
import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, TestClock } from "effect"
import { Approvals } from "../../src/approvals/service.js"
import { REMINDER_WINDOW_MS } from "../../src/approvals/settings.js"
import { ApprovalEventRepo, type ApprovalEventRow } from "../../src/store/approval-events.js"
import { ApprovalRepo } from "../../src/store/approvals.js"
import {
  approvalIn,
  approvalSettings,
  approveAs,
  claimedOf,
  deployArgs,
  dropGroups,
  newPeople,
  pendingOf,
  requestWrite,
  sharedApprovalStores,
  storedRow,
  twoReviews
} from "../support/approval-service.js"
import { storeKinds } from "../support/databases.js"

const stores = sharedApprovalStores()
afterAll(() => stores.close())

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
const eventsOf = (id: string) => Effect.flatMap(ApprovalEventRepo, (events) => events.ofApproval(id))
const actionsOf = (id: string) => Effect.map(eventsOf(id), (events) => events.map((event) => event.action))
const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

/** Every event after `seq`, read the way the notifier reads them: pages of `page` in `seq` order. */
const readAllAfter = (seq: number, page = 100) =>
  Effect.gen(function* () {
    const repo = yield* ApprovalEventRepo
    const all: Array<ApprovalEventRow> = []
    let last = seq
    for (;;) {
      const batch = yield* repo.after(last, page)
      all.push(...batch)
      if (batch.length < page) return all
      last = batch[batch.length - 1]!.seq
    }
  })

describe.each(storeKinds)("approval event outbox (%s)", (kind) => {
  it.scoped(
    "the requester's events name them by internal user id, not by a token subject another connection may share",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const approvals = yield* Approvals
        // An enterprise caller: its token subject is the upstream one, its user id the gateway's own.
        const pending = pendingOf(
          yield* requestWrite(people.requester.caller, deployArgs("7.4"), { requesterId: "usr_internal_requester" })
        )
        yield* approveAs(people.first, pending)
        const claimed = claimedOf(yield* approvals.claim(people.requester.caller, pending.id))
        yield* approvals.completed(claimed.row, { structuredContent: { deployed: "7.4" } })
        const events = yield* eventsOf(pending.id)
        expect(
          events
            .filter((event) => event.action !== "vote" && event.action !== "approved")
            .map((event) => [event.action, event.actor])
        ).toEqual([
          ["requested", "usr_internal_requester"],
          ["executed", "usr_internal_requester"]
        ])
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "each transition writes its event: requested, vote and approved, executed with the result bound, actors and evidence",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const approvals = yield* Approvals
        const args = deployArgs("7.3")
        const pending = pendingOf(yield* requestWrite(people.requester.caller, args, { policy: twoReviews }))
        yield* approveAs(people.first, pending)
        yield* approveAs(people.second, pending)
        const claimed = claimedOf(yield* approvals.claim(people.requester.caller, pending.id))
        yield* approvals.completed(claimed.row, { structuredContent: { deployed: "7.3" } })
        const stored = (yield* storedRow(pending.id))!
        const events = yield* eventsOf(pending.id)
        expect(events.map((event) => [event.action, event.actor])).toEqual([
          ["requested", people.requester.userId],
          ["vote", people.first.user.id],
          ["vote", people.second.user.id],
          ["approved", people.second.user.id],
          ["executed", people.requester.userId]
        ])
        // The sealed intent and result as stored, bound by their SHA-256; nothing of their content.
        for (const event of events) expect(event.intent_hash).toBe(sha256(stored.intent_sealed!))
        expect(events.map((event) => event.result_hash)).toEqual([
          null,
          null,
          null,
          null,
          sha256(stored.result_sealed!)
        ])
        expect(events[1]!.evidence).toEqual({ sign_in: "local", acr: null })
        // Requested and the first vote carry the request's expiry; once approved, the execution deadline.
        expect(events[0]!.expires_at).toEqual(stored.expires_at)
        expect(events[3]!.expires_at).toEqual(stored.execute_by)
        expect(new Set(events.map((event) => event.event_id)).size).toBe(5)
        for (const event of events) expect(event.event_id).toMatch(/^[0-9a-f-]{36}$/)
        const text = JSON.stringify(events)
        expect(text).not.toContain("7.3")
        expect(text).not.toContain(args.operation_id)
        expect(text).not.toContain("staging")
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("rejected, revoked, outcome unknown, expired and withdrawn votes each write their event", () =>
    Effect.gen(function* () {
      const people = yield* newPeople
      const approvals = yield* Approvals
      const rejected = (yield* approvalIn(people, "rejected")).row
      expect(yield* actionsOf(rejected.id)).toEqual(["requested", "rejected"])
      expect((yield* eventsOf(rejected.id))[1]).toMatchObject({
        actor: people.first.user.id,
        evidence: { sign_in: "local" }
      })
      const revoked = (yield* approvalIn(people, "revoked")).row
      expect(yield* actionsOf(revoked.id)).toEqual(["requested", "vote", "approved", "revoked"])
      const unknown = (yield* approvalIn(people, "unknown")).row
      expect(yield* eventsOf(unknown.id)).toContainEqual(
        expect.objectContaining({ action: "outcome_unknown", actor: null, reason: "timeout" })
      )
      const expired = (yield* approvalIn(people, "expired")).row
      expect((yield* eventsOf(expired.id)).map((event) => [event.action, event.actor])).toEqual([
        ["requested", people.requester.userId],
        ["expired", null]
      ])
      // A voter who loses the approver role: the approval goes back to pending, and says so.
      const approved = (yield* approvalIn(people, "approved")).row
      yield* dropGroups(people.first.user.id)
      yield* approvals.claim(people.requester.caller, approved.id)
      expect(yield* actionsOf(approved.id)).toEqual(["requested", "vote", "approved", "votes_withdrawn"])
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "an execution cut short by a restart writes outcome_unknown with reason restart, from the new process",
    () =>
      Effect.gen(function* () {
        const storage = yield* stores.storage(kind)
        const id = yield* Effect.gen(function* () {
          const people = yield* newPeople
          return (yield* approvalIn(people, "executing")).row.id
        }).pipe(Effect.provide(stores.layer(kind)))
        yield* Effect.gen(function* () {
          yield* (yield* Approvals).recover()
          const events = yield* eventsOf(id)
          expect(events.at(-1)).toMatchObject({ action: "outcome_unknown", actor: null, reason: "restart" })
        }).pipe(Effect.provide(stores.open(storage)))
      })
  )

  it.scoped(
    "the tick writes one reminder per deadline within five minutes of it: pending by its expiry, approved by its execution deadline",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const approvals = yield* Approvals
        const pending = pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
        const approved = (yield* approvalIn(people, "approved")).row
        yield* approvals.sweep(approvalSettings)
        expect(yield* actionsOf(pending.id)).toEqual(["requested"])
        // Execution deadline (10 minutes) comes first: 5 minutes and a second on, it is within reach.
        yield* TestClock.adjust(approvalSettings.executeWithinMs - REMINDER_WINDOW_MS + 1000)
        yield* approvals.sweep(approvalSettings)
        yield* approvals.sweep(approvalSettings)
        expect(yield* actionsOf(approved.id)).toEqual(["requested", "vote", "approved", "reminder"])
        expect(yield* actionsOf(pending.id)).toEqual(["requested"])
        const reminder = (yield* eventsOf(approved.id)).at(-1)!
        expect(reminder).toMatchObject({ actor: null, expires_at: approved.execute_by })
        // The request's own expiry (an hour) comes later; its reminder then, once.
        yield* TestClock.setTime(pending.expires_at.getTime() - REMINDER_WINDOW_MS + 1000)
        yield* approvals.sweep(approvalSettings)
        yield* approvals.sweep(approvalSettings)
        expect(yield* actionsOf(pending.id)).toEqual(["requested", "reminder"])
        expect(yield* actionsOf(approved.id)).toEqual(["requested", "vote", "approved", "reminder", "expired"])
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("a change that rolls back leaves no event, and an event that cannot be written rolls the change back", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* ApprovalRepo
      const people = yield* newPeople
      const row = pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
      const at = yield* now
      // The change commits with whatever else its transaction does, or not at all.
      const aborted = yield* sql
        .withTransaction(
          Effect.zipRight(
            repo.finish(row.id, ["pending"], "rejected", at, { decidedBy: "x" }),
            Effect.fail("later failure")
          )
        )
        .pipe(Effect.exit)
      expect(Exit.isFailure(aborted)).toBe(true)
      expect((yield* storedRow(row.id))?.state).toBe("pending")
      expect(yield* actionsOf(row.id)).toEqual(["requested"])
      // Without the counter row the event cannot be numbered: the state change goes with it.
      const broken = yield* sql
        .withTransaction(
          Effect.zipRight(
            sql`DELETE FROM approval_event_counter`,
            repo.finish(row.id, ["pending"], "rejected", at, { decidedBy: "x" })
          )
        )
        .pipe(Effect.exit)
      expect(Exit.isFailure(broken)).toBe(true)
      expect((yield* storedRow(row.id))?.state).toBe("pending")
      expect(yield* actionsOf(row.id)).toEqual(["requested"])
      // And the numbers a rolled-back change took are given out again: no gap.
      const before = yield* (yield* ApprovalEventRepo).latest()
      doneOf(yield* (yield* Approvals).reject(people.first, row.id))
      const events = yield* eventsOf(row.id)
      expect(events.at(-1)).toMatchObject({ action: "rejected", seq: before + 1 })
    }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped(
    "under concurrent transitions seq commits in order: every read sees a gapless prefix, never a later seq before an earlier one",
    () =>
      Effect.gen(function* () {
        const people = yield* newPeople
        const approvals = yield* Approvals
        const rows = yield* Effect.forEach(Array.from({ length: 12 }), () =>
          Effect.map(requestWrite(people.requester.caller, deployArgs()), pendingOf)
        )
        const start = yield* (yield* ApprovalEventRepo).latest()
        let done = false
        let reads = 0
        const reader = Effect.gen(function* () {
          let last = start
          while (!done) {
            const seen = yield* readAllAfter(last, 7)
            for (const event of seen) {
              // A later seq visible before an earlier one would show here as a jump.
              expect(event.seq).toBe(last + 1)
              last = event.seq
            }
            reads += 1
            yield* Effect.yieldNow()
          }
          return last
        })
        const writers = Effect.forEach(
          rows,
          (row, index) =>
            index % 3 === 0
              ? approvals.reject(people.first, row.id)
              : Effect.zipRight(approveAs(people.first, row), approvals.revoke(people.second, row.id)),
          { concurrency: "unbounded" }
        ).pipe(Effect.ensuring(Effect.sync(() => (done = true))))
        const [, last] = yield* Effect.all([writers, reader], { concurrency: "unbounded" })
        const all = yield* readAllAfter(start)
        expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => start + index + 1))
        // 4 rejections (1 event each) and 8 approve-then-revoke (vote, approved, revoked).
        expect(all).toHaveLength(4 + 8 * 3)
        expect(last).toBeLessThanOrEqual(start + all.length)
        expect(reads).toBeGreaterThan(0)
      }).pipe(Effect.provide(stores.layer(kind)))
  )

  it.scoped("a committed event is there for the next process on the same database", () =>
    Effect.gen(function* () {
      const storage = yield* stores.storage(kind)
      const { id, events } = yield* Effect.gen(function* () {
        const people = yield* newPeople
        const row = (yield* approvalIn(people, "rejected")).row
        return { id: row.id, events: yield* eventsOf(row.id) }
      }).pipe(Effect.provide(stores.layer(kind)))
      const reopened = yield* eventsOf(id).pipe(Effect.provide(Layer.fresh(stores.open(storage))))
      expect(reopened).toEqual(events)
    })
  )
})

const doneOf = <A extends { readonly _tag: string }>(outcome: A) => {
  if (outcome._tag !== "Done") throw new Error(`expected Done, got ${JSON.stringify(outcome)}`)
  return outcome
}
