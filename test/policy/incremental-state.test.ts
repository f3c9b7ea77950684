/**
 * docs/access-policy.md, "Rules": the next request is decided by the new policy. The in-memory policy
 * is updated by what a write changed (docs/decisions.md, "Policy writes cost what they change"): a
 * changed group is read again alone and only the grants that read it are dropped. These tests pin the
 * behaviour that must survive that — a write's effect visible to the very next read, a rename, a group
 * gone, a new mapping from an organization group, concurrent writes, a reload of every group — and
 * that an unrelated user's grant is kept, on SQLite and on PostgreSQL.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer, Schema } from "effect"
import { AccessSettingsTag, AccessState, AccessStateLive } from "../../src/policy/access-state.js"
import { Permissions, type Role } from "../../src/policy/permissions.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { policyRepositories } from "../../src/runtime/base.js"
import { BrowserSessionRepo } from "../../src/store/browser-sessions.js"
import { EnrolmentLinkRepo } from "../../src/store/enrolment-links.js"
import { GROUP_SLICE, GroupRepo } from "../../src/store/groups.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { PolicyVersionRepo } from "../../src/store/policy-version.js"
import { SessionCache } from "../../src/store/session-cache.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { UserRepo } from "../../src/store/users.js"
import { storeKinds, testStoreLayer } from "../support/databases.js"
import { type AccessInput, createGroup, grantAccess, testActor } from "../support/grants.js"

const policyLayer = (kind: (typeof storeKinds)[number]) =>
  PolicyWrites.Default.pipe(
    Layer.provideMerge(AccessStateLive),
    Layer.provideMerge(policyRepositories),
    Layer.provideMerge(
      Layer.mergeAll(
        UserRepo.Default,
        SessionRepo.Default,
        EnrolmentLinkRepo.Default,
        LocalCredentialRepo.Default,
        BrowserSessionRepo.Default
      )
    ),
    Layer.provideMerge(SessionCache.Default),
    Layer.provide(
      Layer.succeed(AccessSettingsTag, {
        roleScopes: new Map<Role, ReadonlyArray<string>>([["admin", ["gateway:admin"]]]),
        membershipMaxAgeMs: 86_400_000,
        externalNamespace: undefined,
        bootstrapSubjects: new Set<string>()
      })
    ),
    Layer.provideMerge(testStoreLayer(kind)),
    Layer.orDie
  )

const tools = (tools: ReadonlyArray<string>): ReadonlyArray<AccessInput> => [{ endpoint_id: "crm", tools: [...tools] }]
const permissionsOf = (names: ReadonlyArray<string>) => Schema.decodeUnknownSync(Permissions)({ access: tools(names) })

/** The tools of backend `crm` the user's grant names, read as the next request would. */
const toolsOf = (userId: string) =>
  Effect.gen(function* () {
    const grant = yield* (yield* AccessState).grantOfUser(userId)
    const crm = grant?.endpoint("crm")
    return ["search", "update", "delete"].filter((tool) => (crm?.entries(tool).length ?? 0) > 0)
  })

const revisionOf = (groupId: string) => Effect.map(GroupRepo, (groups) => groups.find(groupId)).pipe(Effect.flatten)

describe.each(storeKinds)("the in-memory policy after a write (%s)", (kind) => {
  it.scoped("a group's change is in the very next read; an unrelated user's kept grant is not rebuilt", () =>
    Effect.gen(function* () {
      const writes = yield* PolicyWrites
      const state = yield* AccessState
      const alice = yield* grantAccess(tools(["search"]))
      const bob = yield* grantAccess(tools(["search"]))
      expect(yield* toolsOf(alice.userId)).toEqual(["search"])
      const bobsGrant = yield* state.grantOfUser(bob.userId)

      const group = yield* revisionOf(alice.groupId)
      yield* writes.updateGroup(testActor, alice.groupId, group!.revision, {
        permissions: permissionsOf(["search", "update"])
      })
      expect(yield* toolsOf(alice.userId)).toEqual(["search", "update"])
      // Bob's groups did not change: his grant is the one built before, not a rebuilt copy.
      expect(yield* state.grantOfUser(bob.userId)).toBe(bobsGrant)

      // Disabled: the group grants nothing from the next read on; enabled again, it does.
      yield* writes.updateGroup(testActor, alice.groupId, group!.revision + 1, { enabled: false })
      expect(yield* toolsOf(alice.userId)).toEqual([])
      yield* writes.updateGroup(testActor, alice.groupId, group!.revision + 2, { enabled: true })
      expect(yield* toolsOf(alice.userId)).toEqual(["search", "update"])
      // A new group (no members yet) keeps every grant.
      yield* createGroup(tools(["delete"]))
      expect(yield* state.grantOfUser(bob.userId)).toBe(bobsGrant)
    }).pipe(Effect.provide(policyLayer(kind)))
  )

  it.scoped("a renamed group shows its new name in the grant's sources at once", () =>
    Effect.gen(function* () {
      const alice = yield* grantAccess(tools(["search"]))
      const group = yield* revisionOf(alice.groupId)
      yield* (yield* PolicyWrites).updateGroup(testActor, alice.groupId, group!.revision, { name: "Renamed readers" })
      const grant = yield* (yield* AccessState).grantOfUser(alice.userId)
      expect(grant?.sources.map((source) => source.group.name)).toEqual(["Renamed readers"])
      expect(yield* toolsOf(alice.userId)).toEqual(["search"])
    }).pipe(Effect.provide(policyLayer(kind)))
  )

  it.scoped("a group deleted from the store (another writer) is gone from the next read", () =>
    Effect.gen(function* () {
      const alice = yield* grantAccess(tools(["search"]))
      expect(yield* toolsOf(alice.userId)).toEqual(["search"])
      const sql = yield* SqlClient.SqlClient
      const version = yield* sql.withTransaction(
        Effect.gen(function* () {
          const version = yield* (yield* PolicyVersionRepo).bump
          yield* sql`DELETE FROM groups WHERE id = ${alice.groupId}`
          return version
        })
      )
      yield* (yield* AccessState).changed({ groups: [alice.groupId], users: [alice.userId], version })
      expect(yield* toolsOf(alice.userId)).toEqual([])
      expect((yield* (yield* AccessState).groups).byId.has(alice.groupId)).toBe(false)
    }).pipe(Effect.provide(policyLayer(kind)))
  )

  it.scoped(
    "a permission group newly mapped from an organization group reaches its members at once; disabled, enabled and unmapped, likewise",
    () =>
      Effect.gen(function* () {
        const writes = yield* PolicyWrites
        const at = new Date(yield* Clock.currentTimeMillis)
        const person = yield* writes.admitEnterpriseUser(
          {
            namespace: "oidc:test",
            subject: "pat",
            name: "Pat",
            groups: [{ externalId: "sales", name: "Sales" }],
            departments: [],
            bootstrap: false
          },
          at
        )
        yield* writes.updateUser(testActor, person.id, person.revision, { enabled: true })
        expect(yield* toolsOf(person.id)).toEqual([])
        const sales = (yield* (yield* GroupRepo).list).find((group) => group.name === "Sales")!
        const mapped = yield* writes.createGroup(testActor, {
          name: "Sales tools",
          enabled: true,
          permissions: permissionsOf(["update"]),
          sourceGroups: [sales.id]
        })
        expect(yield* toolsOf(person.id)).toEqual(["update"])
        yield* writes.updateGroup(testActor, mapped, 1, { enabled: false })
        expect(yield* toolsOf(person.id)).toEqual([])
        yield* writes.updateGroup(testActor, mapped, 2, { enabled: true })
        expect(yield* toolsOf(person.id)).toEqual(["update"])
        yield* writes.updateGroup(testActor, mapped, 3, { sourceGroups: [] })
        expect(yield* toolsOf(person.id)).toEqual([])
      }).pipe(Effect.provide(policyLayer(kind)))
  )

  it.scoped("concurrent writes to many groups are each in the next read", () =>
    Effect.gen(function* () {
      const writes = yield* PolicyWrites
      const people = yield* Effect.all(Array.from({ length: 8 }, () => grantAccess(tools(["search"]))))
      for (const person of people) expect(yield* toolsOf(person.userId)).toEqual(["search"])
      yield* Effect.all(
        people.map((person, index) =>
          writes.updateGroup(testActor, person.groupId, 1, {
            permissions: permissionsOf(index % 2 === 0 ? ["update"] : ["delete"])
          })
        ),
        { concurrency: "unbounded" }
      )
      for (const [index, person] of people.entries()) {
        expect(yield* toolsOf(person.userId)).toEqual(index % 2 === 0 ? ["update"] : ["delete"])
      }
    }).pipe(Effect.provide(policyLayer(kind)))
  )

  it.scoped("a write by another process reloads every group, a slice at a time, with nothing lost", () =>
    Effect.gen(function* () {
      const state = yield* AccessState
      const count = GROUP_SLICE * 2 + 3
      const alice = yield* grantAccess(tools(["search"]))
      for (let n = 0; n < count; n++) yield* createGroup(tools(["delete"]))
      yield* state.changed({})
      const index = yield* state.groups
      // The built-in Administrators group, Alice's and the ones created here.
      expect(index.byId.size).toBe(count + 2)
      expect(yield* toolsOf(alice.userId)).toEqual(["search"])
    }).pipe(Effect.provide(policyLayer(kind)))
  )
})
