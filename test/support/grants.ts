import { randomBytes } from "node:crypto"
import { Clock, Effect, Option, Schema } from "effect"
import { type AccessEntry, Permissions } from "../../src/policy/permissions.js"
import { type Actor, PolicyWrites } from "../../src/policy/writes.js"
import { MembershipRepo } from "../../src/store/memberships.js"
import { UserRepo } from "../../src/store/users.js"

/** Writes made by tests on the administrator's behalf (the source-group mapping needs the built-in one). */
export const testActor: Actor = { userId: "test-administrator", kind: "builtin_admin" }

export type AccessInput = Schema.Schema.Encoded<typeof AccessEntry>

export interface GrantOptions {
  readonly scopes?: ReadonlyArray<string>
  readonly roles?: ReadonlyArray<string>
}

/** A new permission group granting `access`, written through the PolicyWrites the Management API uses. */
export const createGroup = (access: ReadonlyArray<AccessInput>, options: GrantOptions = {}) =>
  Effect.flatMap(PolicyWrites, (writes) =>
    writes.createGroup(testActor, {
      name: `group-${randomBytes(6).toString("hex")}`,
      enabled: true,
      permissions: Schema.decodeUnknownSync(Permissions)({
        scopes: options.scopes ?? [],
        roles: options.roles ?? [],
        access
      }),
      sourceGroups: []
    })
  )

/** Adds user `userId` (keeping its memberships and status) to a new permission group granting `access`. */
export const grantAccessTo = (userId: string, access: ReadonlyArray<AccessInput>, options: GrantOptions = {}) =>
  Effect.gen(function* () {
    const groupId = yield* createGroup(access, options)
    const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
    const current = yield* (yield* MembershipRepo).forUser(userId)
    yield* (yield* PolicyWrites).updateUser(testActor, userId, user.revision, {
      groups: [...current.map((row) => row.group_id), groupId]
    })
    return groupId
  })

/**
 * A real local user in a real permission group granting `access` (and `scopes`), written through the
 * same PolicyWrites the Management API uses. Returns the user's id (a token's `sub`) and the group's.
 */
export const grantAccess = (access: ReadonlyArray<AccessInput>, options: GrantOptions = {}) =>
  Effect.gen(function* () {
    const userId = yield* (yield* UserRepo).insertLocal({
      kind: "local",
      username: `user-${randomBytes(6).toString("hex")}`,
      displayName: "Test user",
      at: new Date(yield* Clock.currentTimeMillis)
    })
    const groupId = yield* grantAccessTo(userId, access, options)
    return { userId, groupId }
  })
