import { randomBytes } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import type { Caller } from "../bearer/caller.js"
import type { ApprovalPolicy } from "../config/schema.js"
import { Sealer } from "../crypto/sealer.js"
import { EventLimiter, securityEvent } from "../events/security-log.js"
import { AccessState } from "../policy/access-state.js"
import { ApprovalRepo, type ApprovalRow, type ApprovalState, type VoteRow } from "../store/approvals.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { UserRepo, type UserRow } from "../store/users.js"
import { type Intent, intentHash, intentText, operationIdOf, operationKey } from "./intent.js"
import { effectivePolicy } from "./policy.js"
import { mayView, namesOf, type Reviewer, reviewRefusal, type StepUpEvidence } from "./reviewers.js"
import { type ApprovalSettings, MAX_ACTIVE_PER_SUBJECT, MAX_INTENT_BYTES, REMINDER_WINDOW_MS } from "./settings.js"

/** A write that needs approval, as ToolCalls hands it over after the PolicyEngine said NeedsApproval. */
export interface ApprovalRequest {
  readonly caller: Caller
  /** The caller's user id here (their Grant's user): who asked, as the review page tells people apart. */
  readonly requesterId: string
  readonly backend: string
  readonly tool: string
  readonly exposedName: string
  /** Digest of the backend's and the tool rule's configuration: cached results are shown only while it holds. */
  readonly sourceHash: string
  readonly arguments: Record<string, unknown>
  readonly policy: ApprovalPolicy
}

export type RequestOutcome =
  /** `created`: false when this was a retry with the same operation id and intent. */
  | { readonly _tag: "Pending"; readonly row: ApprovalRow; readonly created: boolean }
  | { readonly _tag: "Conflict"; readonly message: string }
  | { readonly _tag: "Invalid"; readonly message: string }
  | { readonly _tag: "TooMany" }
  /** The intent is larger than a reviewer can be asked to read (`MAX_INTENT_BYTES`). */
  | { readonly _tag: "TooLarge" }

export type ReviewOutcome =
  | { readonly _tag: "Done"; readonly row: ApprovalRow }
  | { readonly _tag: "Refused"; readonly reason: string; readonly message: string }

export type Claim =
  | { readonly _tag: "Claimed"; readonly row: ApprovalRow; readonly intent: Intent }
  | { readonly _tag: "NotApproved"; readonly row: ApprovalRow }
  | { readonly _tag: "NotFound" }

/** An approval with its votes, as the status tool and the review page show it. */
export interface ApprovalDetail {
  readonly row: ApprovalRow
  readonly votes: ReadonlyArray<VoteRow>
}

const newApprovalId = () => `apr_${randomBytes(16).toString("base64url")}`
const intentContext = (id: string) => `approval_intent:${id}`
const resultContext = (id: string) => `approval_result:${id}`
const decoder = new TextDecoder()
/** Open approvals the review list shows at most. */
const LIST_LIMIT = 2000
/** Open approvals read per query while the review list is built, oldest first. */
const LIST_PAGE = 500
/** Open approvals one review list reads at most: a list its reviewer may see little of stays quick. */
const LIST_SCAN = 20_000

/** The approval log line's fields: never arguments, results or secrets. */
const fieldsOf = (row: ApprovalRow) => ({
  approval_id: row.id,
  subject: row.subject,
  backend: row.backend,
  tool: row.tool,
  state: row.state
})

/**
 * Write approvals (docs/approvals.md): the one owner of every approval's life. ToolCalls asks it to
 * open one when the PolicyEngine says a write needs approval; reviewers vote, reject and revoke through
 * it (the review page); the gateway's tools read status and resume through it. Every transition is a
 * conditional update in the store, so it holds across concurrent reviewers, resumes and restarts.
 */
export class Approvals extends Effect.Service<Approvals>()("gateway/Approvals", {
  effect: Effect.gen(function* () {
    const repo = yield* ApprovalRepo
    const sealer = yield* Sealer
    const access = yield* AccessState
    const users = yield* UserRepo
    const audit = yield* AuditEventRepo
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    // Events a caller or reviewer can repeat at will: at most 10 a minute per person, then `suppressed`.
    const repeatable = new EventLimiter()
    const limitedEvent = (key: string, event: string, fields: Readonly<Record<string, unknown>>) =>
      Effect.flatMap(Clock.currentTimeMillis, (ms) => {
        const suppressed = repeatable.admit(`${event}|${key}`, ms)
        return suppressed === undefined
          ? Effect.void
          : securityEvent(event, suppressed > 0 ? { ...fields, suppressed } : fields)
      })

    /** A row read now: one past its deadline is expired first (the tick does the same for all). */
    const settle = (row: ApprovalRow, at: Date): Effect.Effect<ApprovalRow> => {
      const due =
        (row.state === "pending" && row.expires_at.getTime() <= at.getTime()) ||
        (row.state === "approved" && row.execute_by !== null && row.execute_by.getTime() <= at.getTime())
      if (!due) return Effect.succeed(row)
      return repo.finish(row.id, [row.state], "expired", at).pipe(
        Effect.tap((expired) =>
          Option.isSome(expired) ? securityEvent("approval.expired", fieldsOf(expired.value)) : Effect.void
        ),
        Effect.flatMap((expired) =>
          Option.isSome(expired)
            ? Effect.succeed(expired.value)
            : Effect.map(
                repo.findById(row.id),
                Option.getOrElse(() => row)
              )
        )
      )
    }

    /** Every due approval expires, each with its `approval.expired` line; the rows expired. */
    const expireDue = (at: Date) =>
      Effect.tap(repo.expireDue(at), (rows) =>
        Effect.forEach(rows, (row) => securityEvent("approval.expired", fieldsOf(row)), { discard: true })
      )

    const find = (id: string) =>
      Effect.gen(function* () {
        const row = yield* repo.findById(id)
        if (Option.isNone(row)) return undefined
        return yield* settle(row.value, yield* now)
      })

    /** Only the original issuer and subject see an approval through the MCP tools. */
    const findOwn = (caller: Caller, id: string) =>
      Effect.map(find(id), (row) =>
        row !== undefined && row.issuer === caller.issuer && row.subject === caller.subject ? row : undefined
      )

    const request = Effect.fn("Approvals.request")(function* (input: ApprovalRequest, settings: ApprovalSettings) {
      const { caller } = input
      const operation = operationIdOf(input.policy.operation_id_argument, input.arguments)
      if (operation._tag === "Invalid")
        return { _tag: "Invalid", message: operation.message } satisfies RequestOutcome as RequestOutcome
      const policy = effectivePolicy(input.policy, input.arguments)
      const intent: Intent = {
        arguments: input.arguments,
        metadata: { backend: input.backend, tool: input.tool, client_id: caller.clientId ?? null }
      }
      const text = intentText(intent)
      if (Buffer.byteLength(text) > MAX_INTENT_BYTES) {
        return { _tag: "TooLarge" } satisfies RequestOutcome as RequestOutcome
      }
      const hash = intentHash(intent)
      const id = newApprovalId()
      const at = yield* now
      const key =
        operation._tag === "Id"
          ? operationKey({
              issuer: caller.issuer,
              subject: caller.subject,
              backend: input.backend,
              tool: input.tool,
              operationId: operation.id
            })
          : undefined
      const created = yield* repo.create(
        {
          id,
          operationKey: key,
          issuer: caller.issuer,
          subject: caller.subject,
          requesterId: input.requesterId,
          clientId: caller.clientId,
          backend: input.backend,
          tool: input.tool,
          exposedName: input.exposedName,
          sourceHash: input.sourceHash,
          intentSealed: sealer.seal(text, intentContext(id)),
          intentHash: hash,
          requiredApprovals: policy.requiredApprovals,
          requireStepUp: policy.requireStepUp,
          approvers: policy.approvers,
          risk: policy.risk,
          createdAt: at,
          expiresAt: new Date(at.getTime() + settings.expiresAfterMs)
        },
        MAX_ACTIVE_PER_SUBJECT
      )
      const base = { subject: caller.subject, backend: input.backend, tool: input.tool }
      const requester = `${caller.issuer}|${caller.subject}`
      switch (created._tag) {
        case "Created":
          yield* securityEvent("approval.requested", {
            ...fieldsOf(created.row),
            client_id: caller.clientId ?? null,
            required_approvals: policy.requiredApprovals,
            require_step_up: policy.requireStepUp,
            risk: policy.risk
          })
          return { _tag: "Pending", row: created.row, created: true } satisfies RequestOutcome as RequestOutcome
        case "TooMany":
          yield* limitedEvent(requester, "approval.limit_reached", { ...base, active: created.active })
          return { _tag: "TooMany" } satisfies RequestOutcome as RequestOutcome
        case "Spent":
          yield* limitedEvent(requester, "approval.conflict", {
            ...base,
            reason: "operation_id_spent",
            state: created.state
          })
          return {
            _tag: "Conflict",
            message: `This operation id was already used (${created.state}); use a new operation id.`
          } satisfies RequestOutcome as RequestOutcome
        case "Existing": {
          const row = yield* settle(created.row, at)
          if (row.intent_hash !== hash) {
            yield* limitedEvent(requester, "approval.conflict", { ...fieldsOf(row), reason: "different_intent" })
            return {
              _tag: "Conflict",
              message:
                "This operation id was used with different arguments or metadata; use a new operation id for a different operation."
            } satisfies RequestOutcome as RequestOutcome
          }
          if (row.state !== "pending" && row.state !== "approved" && row.state !== "executing") {
            yield* limitedEvent(requester, "approval.conflict", { ...fieldsOf(row), reason: "operation_id_spent" })
            return {
              _tag: "Conflict",
              message: `This operation id was already used (${row.state}); use a new operation id.`
            } satisfies RequestOutcome as RequestOutcome
          }
          return { _tag: "Pending", row, created: false } satisfies RequestOutcome as RequestOutcome
        }
      }
    })

    /** The status tool's read: the caller's own approval with its votes; never changes anything but expiry. */
    const status = Effect.fn("Approvals.status")(function* (caller: Caller, id: string) {
      const row = yield* findOwn(caller, id)
      if (row === undefined) return undefined
      return { row, votes: yield* repo.votes(row.id) } satisfies ApprovalDetail
    })

    /** A sealed column of `row` opened and parsed, or undefined when there is none or it does not open. */
    const openSealed = <A>(sealed: string | null, context: string) =>
      sealed === null
        ? Effect.succeed(undefined)
        : sealer.open(sealed, context).pipe(
            Effect.map((bytes) => JSON.parse(decoder.decode(bytes)) as A),
            Effect.option,
            Effect.map(Option.getOrUndefined)
          )

    /** The stored intent of an approval (the arguments reviewed), or undefined when it cannot be opened. */
    const intentOf = (row: ApprovalRow) => openSealed<Intent>(row.intent_sealed, intentContext(row.id))

    /** The cached result of a completed approval, or undefined. */
    const resultOf = (row: ApprovalRow) => openSealed<Record<string, unknown>>(row.result_sealed, resultContext(row.id))

    /** The resume's claim: of concurrent resumes of one approved write, exactly one gets `Claimed`. */
    const claim = Effect.fn("Approvals.claim")(function* (caller: Caller, id: string) {
      const row = yield* findOwn(caller, id)
      // Only the client that asked resumes (the intent names it): another client of the same person
      // does not execute a write it never made.
      if (row === undefined || row.client_id !== (caller.clientId ?? null)) {
        return { _tag: "NotFound" } satisfies Claim as Claim
      }
      if (row.state === "approved") {
        const checked = yield* withdrawStaleVotes(row)
        if (checked.state !== "approved") return { _tag: "NotApproved", row: checked } satisfies Claim as Claim
      }
      const claimed = yield* repo.claim(row.id, yield* now)
      if (Option.isNone(claimed)) {
        const current = yield* find(row.id)
        return { _tag: "NotApproved", row: current ?? row } satisfies Claim as Claim
      }
      const intent = yield* intentOf(claimed.value)
      // The intent is sealed to this row; one that does not open (altered, or another key) is never executed.
      if (intent === undefined || intentHash(intent) !== claimed.value.intent_hash) {
        const failed = yield* repo.finish(row.id, ["executing"], "unknown", yield* now, { reason: "intent_invalid" })
        yield* securityEvent("approval.intent_invalid", fieldsOf(Option.getOrElse(failed, () => claimed.value)))
        return { _tag: "NotApproved", row: Option.getOrElse(failed, () => claimed.value) } satisfies Claim as Claim
      }
      return { _tag: "Claimed", row: claimed.value, intent } satisfies Claim as Claim
    })

    /** The claimed write ran and answered: completed, its result cached sealed. */
    const completed = Effect.fn("Approvals.completed")(function* (row: ApprovalRow, result: Record<string, unknown>) {
      const sealed = sealer.seal(JSON.stringify(result), resultContext(row.id))
      const done = yield* repo.finish(row.id, ["executing"], "completed", yield* now, {
        resultSealed: sealed,
        // The internal user id, as every event's actor: the token subject can repeat across identity
        // connections (docs/audit-archive.md). An approval stored before requester_id has none.
        ...(row.requester_id === null ? {} : { actor: row.requester_id })
      })
      if (Option.isSome(done)) {
        yield* securityEvent("approval.executed", { ...fieldsOf(done.value), is_error: result["isError"] === true })
      }
      return Option.getOrElse(done, () => row)
    })

    /** The claimed write may or may not have run (timeout, connection lost after sending): never replayed. */
    const unknownOutcome = Effect.fn("Approvals.unknownOutcome")(function* (row: ApprovalRow, reason: string) {
      const done = yield* repo.finish(row.id, ["executing"], "unknown", yield* now, { reason })
      if (Option.isSome(done)) yield* securityEvent("approval.outcome_unknown", { ...fieldsOf(done.value), reason })
      return Option.getOrElse(done, () => row)
    })

    /** The claimed write provably never reached the backend (no channel): approved again, within its deadline. */
    const notSent = Effect.fn("Approvals.notSent")((row: ApprovalRow) => repo.release(row.id))

    // ——— Reviewers (the review page) ———

    /** The signed-in person as a reviewer: enabled, active, holding the approver role now. */
    /** Enabled, active in the directory, and holding the approver role now. */
    const mayReview = (userId: string) =>
      Effect.map(access.grantOfUser(userId), (grant) => grant?.active === true && grant.roles.has("approver"))

    /**
     * The signed-in person as a reviewer; `upstreamNamespace`: the OpenID Connect / OAuth2 connection
     * people sign in with now (an `approvers` subject names someone there only).
     */
    const reviewerOf = Effect.fn("Approvals.reviewerOf")(function* (
      user: UserRow,
      upstreamNamespace: string | undefined
    ) {
      // Whether their enterprise subject reads like someone's user id: then that entry names that person.
      const subject = user.kind === "enterprise" ? user.external_subject : null
      const idTaken = subject !== null && subject !== user.id && Option.isSome(yield* users.findById(subject))
      return {
        user,
        approver: yield* mayReview(user.id),
        upstreamNamespace,
        names: namesOf(user, upstreamNamespace, idTaken),
        credentialsIssuedBy: user.kind === "local" ? yield* audit.credentialsIssuer(user.id) : undefined
      } satisfies Reviewer
    })

    const detail = Effect.fn("Approvals.detail")(function* (id: string) {
      const row = yield* find(id)
      if (row === undefined) return undefined
      return { row, votes: yield* repo.votes(row.id) } satisfies ApprovalDetail
    })

    /**
     * What this reviewer may see on the review page, oldest first: open approvals they may act on, and
     * their own requests — up to `LIST_LIMIT`, from at most the `LIST_SCAN` oldest open ones, read a
     * page at a time (due ones expire first, in one update).
     */
    const openFor = Effect.fn("Approvals.openFor")(function* (reviewer: Reviewer) {
      yield* expireDue(yield* now)
      const shown: Array<ApprovalRow> = []
      let after: ApprovalRow | undefined
      for (let read = 0; read < LIST_SCAN && shown.length < LIST_LIMIT; read += LIST_PAGE) {
        const page = yield* repo.listOpen(
          LIST_PAGE,
          after === undefined ? undefined : { createdAt: after.created_at, id: after.id }
        )
        for (const row of page) if (mayView(row, reviewer)) shown.push(row)
        if (page.length < LIST_PAGE) break
        after = page[page.length - 1]
      }
      return shown.slice(0, LIST_LIMIT)
    })

    /**
     * Every open approval (pending or approved), oldest first, `limit` of them after `after`: the
     * administrators' overview (the console's approvals page), which links each to its review page.
     * Due ones expire first, so none is shown open past its expiry.
     */
    const openPage = Effect.fn("Approvals.openPage")(function* (
      limit: number,
      after?: { readonly createdAt: Date; readonly id: string }
    ) {
      yield* expireDue(yield* now)
      return yield* repo.listOpen(limit, after)
    })

    /** The `limit` most recently finished approvals (completed, rejected, revoked, expired, unknown), newest first. */
    const recentlyFinished = Effect.fn("Approvals.recentlyFinished")((limit: number) => repo.listFinished(limit))

    /**
     * Votes count only while their reviewers may review: the voters of `row` who no longer hold the
     * approver role (or are disabled, or inactive in the directory) are withdrawn — a pending approval
     * loses their votes, an approved one goes back to pending. The row as it is afterwards.
     */
    const withdrawStaleVotes = (row: ApprovalRow) =>
      Effect.gen(function* () {
        const votes = yield* repo.votes(row.id)
        const stale: Array<string> = []
        for (const vote of votes) if (!(yield* mayReview(vote.reviewer_id))) stale.push(vote.reviewer_id)
        if (stale.length === 0) return row
        const after = (yield* repo.withdrawVotes(row.id, stale)) ?? row
        yield* securityEvent("approval.votes_withdrawn", { ...fieldsOf(after), reviewers: stale })
        return after
      })

    const refused = (row: ApprovalRow, reviewer: Reviewer, action: string, reason: string, message: string) =>
      Effect.as(
        limitedEvent(reviewer.user.id, "approval.review_refused", {
          ...fieldsOf(row),
          reviewer: reviewer.user.id,
          action,
          reason
        }),
        { _tag: "Refused", reason, message } satisfies ReviewOutcome as ReviewOutcome
      )

    /** A reviewer approves: counted once per person; reaching the quorum approves and starts the execution deadline. */
    const approve = Effect.fn("Approvals.approve")(function* (
      reviewer: Reviewer,
      id: string,
      expectedIntent: string,
      stepUp: StepUpEvidence | undefined,
      settings: ApprovalSettings
    ) {
      const row = yield* find(id)
      if (row === undefined)
        return { _tag: "Refused", reason: "not_found", message: "No such approval." } as ReviewOutcome
      // Someone who may not see it is answered as for an unknown id: nobody learns it exists.
      if (!mayView(row, reviewer)) return yield* refused(row, reviewer, "approve", "not_found", "No such approval.")
      const refusal = reviewRefusal(row, reviewer, "approve")
      if (refusal !== undefined) return yield* refused(row, reviewer, "approve", refusal.reason, refusal.message)
      const at = yield* now
      if (row.require_step_up) {
        const fresh =
          stepUp !== undefined &&
          stepUp.approvalId === row.id &&
          settings.stepUpAcrValues.includes(stepUp.acr) &&
          at.getTime() - stepUp.authTime <= settings.stepUpMaxAgeMs &&
          // An authentication "in the future" (beyond a minute of clock skew) is not evidence of freshness.
          stepUp.authTime <= at.getTime() + 60_000
        if (!fresh) {
          return yield* refused(
            row,
            reviewer,
            "approve",
            "step_up_required",
            "This approval needs a fresh sign-in with your identity provider's stronger authentication."
          )
        }
      }
      // The page showed one intent; a vote counts only for exactly that one, and only if it opens.
      const shown = yield* intentOf(row)
      if (shown === undefined || intentHash(shown) !== row.intent_hash) {
        return yield* refused(row, reviewer, "approve", "intent_unreadable", "The request's arguments cannot be shown.")
      }
      if (expectedIntent !== row.intent_hash) {
        return yield* refused(
          row,
          reviewer,
          "approve",
          "intent_changed",
          "The request changed since the page was shown."
        )
      }
      yield* withdrawStaleVotes(row)
      const voted = yield* repo.vote(
        row.id,
        {
          reviewerId: reviewer.user.id,
          reviewerName: reviewer.user.display_name,
          stepUpAcr: row.require_step_up ? stepUp?.acr : undefined,
          stepUpAt: row.require_step_up && stepUp !== undefined ? new Date(stepUp.authTime) : undefined
        },
        at,
        new Date(at.getTime() + settings.executeWithinMs),
        { evidence: { sign_in: reviewer.user.kind, acr: row.require_step_up ? (stepUp?.acr ?? null) : null } }
      )
      if (voted._tag === "NotPending") {
        return yield* refused(row, reviewer, "approve", "not_pending", "This approval is no longer waiting for votes.")
      }
      if (voted._tag === "AlreadyVoted") {
        return yield* refused(row, reviewer, "approve", "already_voted", "You have already approved this request.")
      }
      yield* securityEvent("approval.vote", {
        ...fieldsOf(voted.row),
        reviewer: reviewer.user.id,
        step_up_acr: row.require_step_up ? (stepUp?.acr ?? null) : null
      })
      if (voted.row.state === "approved") yield* securityEvent("approval.approved", fieldsOf(voted.row))
      return { _tag: "Done", row: voted.row } as ReviewOutcome
    })

    const decide = (verb: "reject" | "revoke", from: ReadonlyArray<ApprovalState>, to: "rejected" | "revoked") =>
      Effect.fn(`Approvals.${verb}`)(function* (reviewer: Reviewer, id: string) {
        const row = yield* find(id)
        if (row === undefined)
          return { _tag: "Refused", reason: "not_found", message: "No such approval." } as ReviewOutcome
        if (!mayView(row, reviewer)) return yield* refused(row, reviewer, verb, "not_found", "No such approval.")
        const refusal = reviewRefusal(row, reviewer, verb)
        if (refusal !== undefined) return yield* refused(row, reviewer, verb, refusal.reason, refusal.message)
        const done = yield* repo.finish(row.id, from, to, yield* now, {
          decidedBy: reviewer.user.id,
          evidence: { sign_in: reviewer.user.kind }
        })
        if (Option.isNone(done)) {
          return yield* refused(row, reviewer, verb, "not_open", `This approval can no longer be ${to}.`)
        }
        yield* securityEvent(`approval.${to}`, { ...fieldsOf(done.value), reviewer: reviewer.user.id })
        return { _tag: "Done", row: done.value } as ReviewOutcome
      })

    /**
     * The maintenance tick: expiry of every due approval, one reminder for each open approval whose
     * deadline is within `REMINDER_WINDOW_MS`, then retention (tombstones).
     */
    const sweep = Effect.fn("Approvals.sweep")(function* (settings: ApprovalSettings) {
      const at = yield* now
      const expired = yield* expireDue(at)
      let reminded = 0
      for (;;) {
        const batch = yield* repo.remind(at, REMINDER_WINDOW_MS, 500)
        reminded += batch
        if (batch < 500) break
      }
      let dropped = 0
      for (;;) {
        const batch = yield* repo.purge(new Date(at.getTime() - settings.retentionMs), 500)
        dropped += batch
        if (batch < 500) break
      }
      return { expired: expired.length, reminded, dropped }
    })

    /** At start: executions a stop cut short have an unclear outcome (never replayed). */
    const recover = Effect.fn("Approvals.recover")(function* () {
      const rows = yield* repo.interrupted(yield* now)
      for (const row of rows) yield* securityEvent("approval.outcome_unknown", { ...fieldsOf(row), reason: "restart" })
    })

    return {
      request,
      status,
      intentOf,
      resultOf,
      claim,
      completed,
      unknownOutcome,
      notSent,
      reviewerOf,
      detail,
      openFor,
      openPage,
      recentlyFinished,
      approve,
      reject: decide("reject", ["pending"], "rejected"),
      revoke: decide("revoke", ["pending", "approved"], "revoked"),
      sweep,
      recover
    } as const
  })
}) {}
