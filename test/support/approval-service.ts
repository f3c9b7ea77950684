import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Exit, Layer, Option, type Redacted, Schema, Scope } from "effect"
import type { Reviewer, StepUpEvidence } from "../../src/approvals/reviewers.js"
import {
  type ApprovalRequest,
  Approvals,
  type Claim,
  type RequestOutcome,
  type ReviewOutcome
} from "../../src/approvals/service.js"
import type { ApprovalSettings } from "../../src/approvals/settings.js"
import { authRepositories } from "../../src/auth/layer.js"
import type { Caller } from "../../src/bearer/caller.js"
import { ApprovalPolicy, type StorageConfig } from "../../src/config/schema.js"
import { type AccessSettings, AccessSettingsTag, AccessStateLive } from "../../src/policy/access-state.js"
import { APPROVER_SCOPE, SECURITY_SCOPE } from "../../src/policy/roles.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { policyRepositories } from "../../src/runtime/base.js"
import { ApprovalEventRepo } from "../../src/store/approval-events.js"
import { ApprovalRepo, type ApprovalRow, type ApprovalState } from "../../src/store/approvals.js"
import { UserRepo } from "../../src/store/users.js"
import { randomConfigKey, type StoreKindUnderTest, storeLayer, withStorage } from "./databases.js"
import { createGroup, grantAccess, testActor } from "./grants.js"

/**
 * The write-approval service as the base layer composes it (src/runtime/base.ts): ApprovalRepo and
 * Approvals over the real store, the Sealer of the configuration key, and the stored access policy
 * (AccessState, PolicyWrites), so reviewers are real users whose approver role comes from real
 * permission groups. Tests build it per test on a database of each kind (SQLite file, PostgreSQL
 * database) shared by one test file and emptied of approvals first (`sharedApprovalStores`).
 */

export const ISSUER = "https://gw.example.com/sso"

/** The deadlines the tests give: a request waits an hour, an approved write may run for 10 minutes. */
export const approvalSettings: ApprovalSettings = {
  expiresAfterMs: 60 * 60_000,
  executeWithinMs: 10 * 60_000,
  retentionMs: 24 * 60 * 60_000,
  stepUpAcrValues: ["phr", "urn:mfa"],
  stepUpMaxAgeMs: 5 * 60_000
}

const accessSettings: AccessSettings = {
  roleScopes: new Map([
    ["admin", ["gateway:admin"]],
    ["approver", [APPROVER_SCOPE]],
    ["security_reviewer", [SECURITY_SCOPE]]
  ]),
  membershipMaxAgeMs: 24 * 60 * 60_000,
  externalNamespace: undefined,
  bootstrapSubjects: new Set()
}

/** Approvals, its repository and the stored access policy over `storage`, sealed with `key`. */
export const approvalLayerOn = (storage: StorageConfig, key: Redacted.Redacted<Uint8Array>) =>
  Layer.mergeAll(Approvals.Default, PolicyWrites.Default).pipe(
    Layer.provideMerge(Layer.merge(ApprovalRepo.Default, ApprovalEventRepo.Default)),
    Layer.provideMerge(AccessStateLive),
    Layer.provideMerge(Layer.mergeAll(authRepositories, policyRepositories)),
    Layer.provide(Layer.succeed(AccessSettingsTag, accessSettings)),
    Layer.provideMerge(storeLayer(storage, key))
  )

/** Empties the approval tables (nothing else refers to them; users and groups of other tests stay). */
const emptyApprovals = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM approval_votes`
  yield* sql`DELETE FROM approval_tombstones`
  yield* sql`DELETE FROM approvals`
}).pipe(Effect.orDie)

/**
 * One database of each kind for a whole test file (created and migrated on first use, removed by
 * `close`), whose approval tables each test's layer empties before the test runs: every test starts
 * with no approvals, as on a fresh database, without paying for a new PostgreSQL database and its
 * migrations each time. Tests create their own users, so what earlier tests left there never meets
 * them. A restart is `open` again on the same `storage`.
 */
export const sharedApprovalStores = () => {
  const scope = Effect.runSync(Scope.make())
  const key = randomConfigKey()
  const storages = new Map<StoreKindUnderTest, Promise<StorageConfig>>()
  const storageOf = (kind: StoreKindUnderTest) =>
    Effect.promise(() => {
      const known = storages.get(kind)
      if (known !== undefined) return known
      const created = Effect.runPromise(Scope.extend(withStorage(kind), scope))
      storages.set(kind, created)
      return created
    })
  /** The services over `storage` (not emptied: what a restarted process finds). */
  const open = (storage: StorageConfig) => approvalLayerOn(storage, key)
  return {
    storage: storageOf,
    open,
    /** The services on the file's database of `kind`, with no approvals in it. */
    layer: (kind: StoreKindUnderTest) =>
      Layer.unwrapEffect(Effect.map(storageOf(kind), open)).pipe(
        Layer.tap((context) =>
          Effect.provideService(emptyApprovals, SqlClient.SqlClient, Context.get(context, SqlClient.SqlClient))
        )
      ),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export type PolicyInput = Schema.Schema.Encoded<typeof ApprovalPolicy>
export const policyOf = (input: PolicyInput): ApprovalPolicy => Schema.decodeUnknownSync(ApprovalPolicy)(input)

/** One reviewer approves (the rule's base). */
export const singleReview = policyOf({ operation_id_argument: "/operation_id" })
/** Two distinct reviewers approve. */
export const twoReviews = policyOf({ operation_id_argument: "/operation_id", required_approvals: 2 })
/** One reviewer with a fresh step-up approves. */
export const stepUpReview = policyOf({ operation_id_argument: "/operation_id", require_step_up: true })

/** A caller through client `cli` (`clientId` null: a token naming no client) of the gateway's issuer. */
export const callerOf = (subject: string, clientId: string | null = "cli", issuer = ISSUER): Caller => ({
  issuer,
  subject,
  scopes: new Set(),
  clientId: clientId ?? undefined,
  sessionId: undefined,
  tokenId: undefined,
  expiresAt: 0
})

const opsAccess = [{ endpoint_id: "ops", tools: ["deploy"], allow_write_requests: true }]

/** A real local user allowed to call `ops/deploy` (and, with `approver`, holding the approver role). */
export const newRequester = (options: { readonly approver?: boolean } = {}) =>
  Effect.map(grantAccess(opsAccess, { roles: options.approver === true ? ["approver"] : [] }), ({ userId }) => ({
    userId,
    caller: callerOf(userId)
  }))

/** A local person on the review page as `Approvals.reviewerOf` sees them now (no upstream sign-in). */
export const reviewerOfUser = (userId: string) =>
  Effect.gen(function* () {
    const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
    return yield* (yield* Approvals).reviewerOf(user, undefined)
  })

/** A real user in a real permission group granting the approver role (and no tools). */
export const newReviewer = Effect.flatMap(grantAccess([], { roles: ["approver"] }), ({ userId }) =>
  reviewerOfUser(userId)
)

/** A real user without the approver role. */
export const newBystander = Effect.flatMap(grantAccess(opsAccess), ({ userId }) => reviewerOfUser(userId))

/** Disables a user through the same PolicyWrites the Management API uses. */
export const disableUser = (userId: string) =>
  Effect.gen(function* () {
    const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
    yield* (yield* PolicyWrites).updateUser(testActor, userId, user.revision, { enabled: false })
  })

/** Takes a user out of every permission group (so out of the approver role), keeping them enabled. */
export const dropGroups = (userId: string) =>
  Effect.gen(function* () {
    const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
    yield* (yield* PolicyWrites).updateUser(testActor, userId, user.revision, { enabled: true, groups: [] })
  })

export interface WriteTarget {
  readonly backend?: string
  readonly tool?: string
  readonly policy?: ApprovalPolicy
  readonly settings?: ApprovalSettings
}

/** The ApprovalRequest ToolCalls hands over for `ops/deploy` (or `target`). */
export const writeRequest = (
  caller: Caller,
  args: Record<string, unknown>,
  target: WriteTarget = {}
): ApprovalRequest => ({
  caller,
  backend: target.backend ?? "ops",
  tool: target.tool ?? "deploy",
  exposedName: `${target.backend ?? "ops"}__${target.tool ?? "deploy"}`,
  sourceHash: "source-1",
  arguments: args,
  policy: target.policy ?? singleReview
})

export const requestWrite = (caller: Caller, args: Record<string, unknown>, target: WriteTarget = {}) =>
  Effect.flatMap(Approvals, (approvals) =>
    approvals.request(writeRequest(caller, args, target), target.settings ?? approvalSettings)
  )

/** The approval of a request that must have been accepted. */
export const pendingOf = (outcome: RequestOutcome): ApprovalRow => {
  if (outcome._tag !== "Pending") throw new Error(`expected a pending approval, got ${JSON.stringify(outcome)}`)
  return outcome.row
}

/** `reviewer` approves `row` as the review page showed it (its intent hash). */
export const approveAs = (
  reviewer: Reviewer,
  row: ApprovalRow,
  stepUp?: StepUpEvidence,
  settings: ApprovalSettings = approvalSettings
) => Effect.flatMap(Approvals, (approvals) => approvals.approve(reviewer, row.id, row.intent_hash, stepUp, settings))

/** The stored row as it is (no expiry applied on read). */
export const storedRow = (id: string) =>
  Effect.flatMap(ApprovalRepo, (repo) => repo.findById(id)).pipe(Effect.map(Option.getOrUndefined))

export const storedState = (id: string) => Effect.map(storedRow(id), (row) => row?.state)

let sequence = 0
/** A fresh operation id. */
export const opId = () => `op-${Date.now().toString(36)}-${sequence++}`

/** The answer of a review that must have been taken. */
export const doneOf = (outcome: ReviewOutcome): ApprovalRow => {
  if (outcome._tag !== "Done") throw new Error(`expected the review to be taken, got ${JSON.stringify(outcome)}`)
  return outcome.row
}

/** The resume's claim that must have been won. */
export const claimedOf = (claim: Claim) => {
  if (claim._tag !== "Claimed") throw new Error(`expected the claim to be won, got ${claim._tag}`)
  return claim
}

/** A requester and two reviewers, all real users. */
export interface People {
  readonly requester: { readonly userId: string; readonly caller: Caller }
  readonly first: Reviewer
  readonly second: Reviewer
}

/** A real local user, member of `groupId` only, as a reviewer. */
const memberOf = (groupId: string) =>
  Effect.gen(function* () {
    const userId = yield* (yield* UserRepo).insertLocal({
      kind: "local",
      username: `reviewer-${randomBytes(6).toString("hex")}`,
      displayName: "Test reviewer",
      at: new Date(yield* Clock.currentTimeMillis)
    })
    yield* (yield* PolicyWrites).updateUser(testActor, userId, 1, { enabled: true, groups: [groupId] })
    return yield* reviewerOfUser(userId)
  })

/** A requester and two reviewers (members of one permission group granting the approver role). */
export const newPeople = Effect.gen(function* () {
  const requester = yield* newRequester()
  const approvers = yield* createGroup([], { roles: ["approver"] })
  const people: People = { requester, first: yield* memberOf(approvers), second: yield* memberOf(approvers) }
  return people
})

/** Arguments of a deploy with a fresh operation id. */
export const deployArgs = (version = "1.0", operationId = opId()) => ({
  operation_id: operationId,
  environment: "staging",
  version
})

/**
 * A new approval of `people.requester` brought to `state` the way the service gets there (expired: a
 * request whose wait is zero, read once). Returns the row as stored and the arguments requested.
 */
export const approvalIn = (people: People, state: ApprovalState, args: Record<string, unknown> = deployArgs()) =>
  Effect.gen(function* () {
    const approvals = yield* Approvals
    const { requester, first } = people
    if (state === "expired") {
      const row = pendingOf(
        yield* requestWrite(requester.caller, args, { settings: { ...approvalSettings, expiresAfterMs: 0 } })
      )
      yield* approvals.detail(row.id)
      return { row: (yield* storedRow(row.id))!, args }
    }
    const pending = pendingOf(yield* requestWrite(requester.caller, args))
    if (state === "pending") return { row: pending, args }
    if (state === "rejected") return { row: doneOf(yield* approvals.reject(first, pending.id)), args }
    const approved = doneOf(yield* approveAs(first, pending))
    if (state === "approved") return { row: approved, args }
    if (state === "revoked") return { row: doneOf(yield* approvals.revoke(first, approved.id)), args }
    const executing = claimedOf(yield* approvals.claim(requester.caller, approved.id)).row
    if (state === "executing") return { row: executing, args }
    if (state === "completed") {
      return { row: yield* approvals.completed(executing, { structuredContent: { deployed: args["version"] } }), args }
    }
    return { row: yield* approvals.unknownOutcome(executing, "timeout"), args }
  })
