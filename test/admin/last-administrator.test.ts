/**
 * 409 `last_administrator` (docs/management-api.md, "The last local administrator": disabling or
 * demoting the last effective administrator, including membership removal and disabling effective
 * groups, checked in the update transaction; a local administrator is always retained; only the
 * built-in administrator maps organization groups). Concurrent writes: one `If-Match` revision wins once, and two
 * demotions that are each fine alone cannot both pass — on SQLite and on PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { PolicyWrites } from "../../src/policy/writes.js"
import { GroupRepo } from "../../src/store/groups.js"
import { UserRepo } from "../../src/store/users.js"
import { type ApiAnswer, adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { createGroup, grantAccess, testActor } from "../support/grants.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const setup = (kind: (typeof storeKinds)[number]) =>
  Effect.gen(function* () {
    const gateway = yield* oauthGateway({ kind })
    const api = managementApi(gateway, yield* adminToken(gateway))
    const admin = Option.getOrThrow(
      yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))
    )
    return { gateway, api, admin }
  })

const recordOf = (api: ReturnType<typeof managementApi>, id: string) =>
  Effect.map(
    api.get("/api/v1/identities"),
    (listed) =>
      [
        ...(listed.body["users"] as Array<Record<string, unknown>>),
        ...(listed.body["groups"] as Array<Record<string, unknown>>)
      ].find((record) => record["id"] === id)!
  )

const statuses = (answers: ReadonlyArray<ApiAnswer>) => answers.map((answer) => answer.status).sort()

describe.each(storeKinds)("the last local administrator (%s)", (kind) => {
  it.scoped("cannot be disabled, removed from Administrators, or lose it by the group being disabled (409)", () =>
    Effect.gen(function* () {
      const { api, admin } = yield* setup(kind)
      const path = `/api/v1/identities/${admin.id}`
      const current = yield* recordOf(api, admin.id)
      const disable = yield* api.put(path, { enabled: false }, ifMatch(current))
      expect(disable).toMatchObject({ status: 409, body: { error: "last_administrator" } })
      const leave = yield* api.put(path, { enabled: true, groups: [] }, ifMatch(current))
      expect(leave).toMatchObject({ status: 409, body: { error: "last_administrator" } })
      const administrators = yield* recordOf(api, "administrators")
      const groupOff = yield* api.put("/api/v1/identities/administrators", { enabled: false }, ifMatch(administrators))
      expect(groupOff).toMatchObject({ status: 409, body: { error: "last_administrator" } })
      // Nothing was written: the same revisions still apply.
      expect(yield* recordOf(api, admin.id)).toMatchObject({ revision: current["revision"], status: "enabled" })
      expect(yield* recordOf(api, "administrators")).toMatchObject({
        revision: administrators["revision"],
        enabled: true
      })
    })
  )

  it.scoped("an enterprise administrator does not count: a local one must remain", () =>
    Effect.gen(function* () {
      const { gateway, api, admin } = yield* setup(kind)
      // An enterprise user holding the admin role through a permission group.
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const id = yield* (yield* UserRepo).insertEnterprise({
            namespace: "oidc:test",
            externalSubject: "boss",
            displayName: "Boss",
            at: new Date(0)
          })
          const adminRole = yield* createGroup([], { roles: ["admin"] })
          yield* (yield* PolicyWrites).updateUser(testActor, id, 1, { enabled: true, groups: [adminRole] })
        })
      )
      const current = yield* recordOf(api, admin.id)
      const disable = yield* api.put(`/api/v1/identities/${admin.id}`, { enabled: false }, ifMatch(current))
      expect(disable).toMatchObject({ status: 409, body: { error: "last_administrator" } })
    })
  )

  it.scoped(
    "with a second local administrator one of them may go, but of two concurrent demotions exactly one wins",
    () =>
      Effect.gen(function* () {
        const { gateway, admin } = yield* setup(kind)
        const { userId: second } = yield* inGateway(gateway)(grantAccess([], { roles: ["admin"] }))
        // Each alone would leave the other; together they would leave none. Decided in the transaction.
        const outcomes = yield* inGateway(gateway)(
          Effect.gen(function* () {
            const writes = yield* PolicyWrites
            const users = yield* UserRepo
            const revision = (id: string) => Effect.map(users.findById(id), (user) => Option.getOrThrow(user).revision)
            const first = yield* revision(admin.id)
            const other = yield* revision(second)
            return yield* Effect.all(
              [
                Effect.either(writes.updateUser(testActor, admin.id, first, { enabled: false })),
                Effect.either(writes.updateUser(testActor, second, other, { enabled: false }))
              ],
              { concurrency: "unbounded" }
            )
          })
        )
        const refused = outcomes.filter((outcome) => outcome._tag === "Left")
        expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(1)
        expect(refused.map((outcome) => outcome._tag === "Left" && outcome.left.code)).toEqual(["last_administrator"])
      })
  )

  it.scoped("two writes with the same If-Match revision: one succeeds, the other gets 412", () =>
    Effect.gen(function* () {
      const { gateway, api } = yield* setup(kind)
      const groupId = yield* inGateway(gateway)(createGroup([{ endpoint_id: "crm", tools: ["search"] }]))
      const group = yield* recordOf(api, groupId)
      const answers = yield* Effect.all(
        Array.from({ length: 6 }, (_, n) =>
          api.put(`/api/v1/identities/groups/${groupId}`, { name: `renamed ${n}` }, ifMatch(group))
        ),
        { concurrency: "unbounded" }
      )
      expect(statuses(answers)).toEqual([200, 412, 412, 412, 412, 412])
      const stored = yield* inGateway(gateway)(Effect.flatMap(GroupRepo, (groups) => groups.find(groupId)))
      expect(stored?.revision).toBe(2)
    })
  )
})
