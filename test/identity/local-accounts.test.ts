/**
 * docs/local-accounts.md: the LocalAccountAdmin service on SQLite and PostgreSQL — an enrolment link is
 * used once even when two redemptions race (one conditional DELETE decides), two racing creates of
 * look-alike names make one account, a wrong code or a tampered offered secret does not use the link
 * up; and a local account given this way can approve, as `local:<username>`, a write the built-in
 * administrator requested.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, Redacted } from "effect"
import { afterAll, beforeAll } from "vitest"
import { LocalAccountAdmin } from "../../src/identity/local/account-admin.js"
import { initAdmin } from "../../src/identity/local/admin.js"
import { totpAt } from "../../src/identity/local/totp.js"
import type { Actor } from "../../src/policy/writes.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { UserRepo } from "../../src/store/users.js"
import {
  approvalIdOf,
  browserOf,
  deploy,
  type OpsBackend,
  opsAccess,
  review,
  startApprovalGateway,
  startOps,
  statusOf
} from "../support/approvals.js"
import { storeKinds } from "../support/databases.js"
import { grantAccessTo, testActor } from "../support/grants.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const PASSWORD = Redacted.make("a long enough password")

/** Creates `username` and redeems its link with a correct code: the person's user id. */
const createAndEnrol = (username: string, actor: Actor = testActor) =>
  Effect.gen(function* () {
    const accounts = yield* LocalAccountAdmin
    const issued = yield* accounts.create(actor, { username, displayName: username })
    const offered = accounts.offerSecret(issued.token)
    const outcome = yield* accounts.enrol({
      token: issued.token,
      password: PASSWORD,
      sealedSecret: offered.sealed,
      code: totpAt(offered.secret, yield* Clock.currentTimeMillis)
    })
    expect(outcome._tag).toBe("Enrolled")
    return issued.account.user.id
  })

describe.each(storeKinds)("LocalAccountAdmin (%s)", (kind) => {
  it.scoped("of two concurrent redemptions of one link exactly one enrols", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const accounts = yield* LocalAccountAdmin
          for (const round of [1, 2, 3]) {
            const issued = yield* accounts.create(testActor, { username: `racer-${round}`, displayName: "R" })
            const redeem = Effect.suspend(() => {
              const offered = accounts.offerSecret(issued.token)
              return Effect.flatMap(Clock.currentTimeMillis, (now) =>
                accounts.enrol({
                  token: issued.token,
                  password: PASSWORD,
                  sealedSecret: offered.sealed,
                  code: totpAt(offered.secret, now)
                })
              )
            })
            const outcomes = yield* Effect.all([redeem, redeem, redeem], { concurrency: "unbounded" })
            expect(outcomes.filter((outcome) => outcome._tag === "Enrolled")).toHaveLength(1)
            expect(
              outcomes.filter((outcome) => outcome._tag === "Failed" && outcome.reason === "link_dead")
            ).toHaveLength(2)
            const user = Option.getOrThrow(yield* (yield* UserRepo).findById(issued.account.user.id))
            expect(user.status).toBe("enabled")
          }
        })
      )
    })
  )

  it.scoped("two racing creates of look-alike names make one account", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const accounts = yield* LocalAccountAdmin
          const outcomes = yield* Effect.all(
            ["Zoë", "zoë", "ZOË", "Zoe\u0308"].map((username) =>
              Effect.either(accounts.create(testActor, { username, displayName: "Z" }))
            ),
            { concurrency: "unbounded" }
          )
          expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(1)
          for (const outcome of outcomes) {
            if (outcome._tag === "Left") expect(outcome.left.code).toBe("name_taken")
          }
          expect((yield* accounts.list("", 10)).accounts).toHaveLength(1)
        })
      )
    })
  )

  it.scoped("a wrong code or a tampered offered secret leaves the link usable", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const accounts = yield* LocalAccountAdmin
          const issued = yield* accounts.create(testActor, { username: "gina", displayName: "G" })
          const offered = accounts.offerSecret(issued.token)
          const now = yield* Clock.currentTimeMillis
          const wrong = yield* accounts.enrol({
            token: issued.token,
            password: PASSWORD,
            sealedSecret: offered.sealed,
            code: totpAt(offered.secret, now + 5 * 60_000)
          })
          expect(wrong).toMatchObject({ _tag: "Failed", reason: "wrong_code" })
          // A secret sealed for another link cannot be carried over.
          const other = yield* accounts.create(testActor, { username: "hank", displayName: "H" })
          const foreign = accounts.offerSecret(other.token)
          const tampered = yield* accounts.enrol({
            token: issued.token,
            password: PASSWORD,
            sealedSecret: foreign.sealed,
            code: totpAt(foreign.secret, now)
          })
          expect(tampered).toMatchObject({ _tag: "Failed", reason: "form_stale" })
          expect(Option.isSome(yield* accounts.openLink(issued.token))).toBe(true)
          const right = yield* accounts.enrol({
            token: issued.token,
            password: PASSWORD,
            sealedSecret: offered.sealed,
            code: totpAt(offered.secret, now)
          })
          expect(right._tag).toBe("Enrolled")
          expect(Option.isNone(yield* accounts.openLink(issued.token))).toBe(true)
        })
      )
    })
  )
})

describe.each(storeKinds)("LocalAccountAdmin and the last local administrator (%s)", (kind) => {
  it.scoped("refuses to disable or reset the only local administrator left, with last_administrator", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const accounts = yield* LocalAccountAdmin
          const id = yield* createAndEnrol("root2")
          yield* grantAccessTo(id, [], { roles: ["admin"] })
          // The built-in administrator leaves the Administrators group: root2 is the one local administrator.
          const admin = Option.getOrThrow(yield* (yield* UserRepo).findBuiltinAdmin)
          yield* (yield* PolicyWrites).updateUser(testActor, admin.id, admin.revision, { enabled: true, groups: [] })
          const revision = (yield* accounts.show(id)).user.revision
          const attempts: ReadonlyArray<Effect.Effect<unknown, { readonly code: string }>> = [
            accounts.disable(testActor, id, revision),
            accounts.resetPassword(testActor, id, revision),
            accounts.resetMfa(testActor, id, revision)
          ]
          for (const attempt of attempts) {
            const refused = yield* Effect.flip(attempt)
            expect(refused.code).toBe("last_administrator")
          }
          const unchanged = yield* accounts.show(id)
          expect(unchanged.user).toMatchObject({ status: "enabled", revision })
        })
      )
    })
  )
})

/** The built-in administrator, allowed the ops tools, requests a write that needs approval. */
const adminRequestsWrite = async (gateway: Awaited<ReturnType<typeof startApprovalGateway>>) => {
  const adminId = await gateway.run(
    Effect.gen(function* () {
      yield* initAdmin({ reset: false, resetPassword: true, resetMfa: false, password: PASSWORD })
      const admin = Option.getOrThrow(yield* (yield* UserRepo).findBuiltinAdmin)
      yield* grantAccessTo(admin.id, opsAccess)
      return admin.id
    })
  )
  const adminToken = await gateway.token({ subject: adminId })
  const answer = await deploy(gateway, adminToken, { operation_id: `op-${Date.now()}`, environment: "dev" })
  return { adminId, adminToken, approvalId: approvalIdOf(answer) }
}

describe("a local account as an approver", () => {
  let ops: OpsBackend
  beforeAll(async () => {
    ops = await startOps()
  })
  afterAll(async () => {
    await ops?.stop()
  })

  it("approves, as local:<username>, a write the built-in administrator requested", async () => {
    const gateway = await startApprovalGateway(ops, { approvers: [{ subjects: ["local:rita"] }] })
    try {
      const { adminId, adminToken, approvalId } = await adminRequestsWrite(gateway)
      const rita = await gateway.run(
        Effect.gen(function* () {
          const id = yield* createAndEnrol("rita")
          yield* grantAccessTo(id, [], { roles: ["approver"] })
          return id
        })
      )
      // The administrator is no reviewer of their own request; rita is, by her name.
      const own = await review(gateway, (await browserOf(gateway, adminId)).cookie, approvalId, "approve")
      expect(own.status).not.toBe(303)
      const approved = await review(gateway, (await browserOf(gateway, rita)).cookie, approvalId, "approve")
      expect(approved.status).toBe(303)
      expect((await statusOf(gateway, adminToken, approvalId)).structuredContent).toMatchObject({ state: "approved" })
    } finally {
      await gateway.close()
    }
  })

  it("refuses the approval of an account whose enrolment link the requester handed out; an account someone else set up approves", async () => {
    const gateway = await startApprovalGateway(ops, { approvers: [] })
    try {
      const { adminId, adminToken, approvalId } = await adminRequestsWrite(gateway)
      // The requester creates an approver and holds its link: that approver's vote is not independent.
      const minted = await gateway.run(
        Effect.gen(function* () {
          const id = yield* createAndEnrol("mallory", { userId: adminId, kind: "builtin_admin" })
          yield* grantAccessTo(id, [], { roles: ["approver"] })
          return id
        })
      )
      const refused = await review(gateway, (await browserOf(gateway, minted)).cookie, approvalId, "approve")
      expect(refused.status).not.toBe(303)
      expect(await refused.text()).toContain("set up your account")
      expect((await statusOf(gateway, adminToken, approvalId)).structuredContent).toMatchObject({ state: "pending" })
      // A person whose credentials someone else handed out approves.
      const other = await gateway.run(
        Effect.gen(function* () {
          const id = yield* createAndEnrol("olga")
          yield* grantAccessTo(id, [], { roles: ["approver"] })
          return id
        })
      )
      const approved = await review(gateway, (await browserOf(gateway, other)).cookie, approvalId, "approve")
      expect(approved.status).toBe(303)
      expect((await statusOf(gateway, adminToken, approvalId)).structuredContent).toMatchObject({ state: "approved" })
    } finally {
      await gateway.close()
    }
  })
})
