import { Clock, Effect, Option } from "effect"
import { Backends } from "../mcp/upstream/backends.js"
import { AccessState } from "../policy/access-state.js"
import { explainAccess } from "../policy/explain.js"
import { GroupRepo } from "../store/groups.js"
import { MembershipRepo, type MembershipRow } from "../store/memberships.js"
import { UserRepo, type UserRow } from "../store/users.js"
import { groupRecord, userRecord } from "./records.js"
import type { EffectiveAccess } from "./schemas.js"

/**
 * The reads of identities the Management API (`/api/v1/identities…`) and the console's pages share:
 * records as the API shows them, assembled from the store, each bounded by what it shows.
 */

/** `rows` as records: their memberships and the names of just those groups (never every group). */
export const userRecords = (rows: ReadonlyArray<UserRow>) =>
  Effect.gen(function* () {
    if (rows.length === 0) return []
    const memberships = yield* (yield* MembershipRepo).forUsers(rows.map((user) => user.id))
    const byUser = new Map<string, Array<MembershipRow>>()
    for (const row of memberships) {
      const mine = byUser.get(row.user_id)
      if (mine === undefined) byUser.set(row.user_id, [row])
      else mine.push(row)
    }
    const names = yield* (yield* GroupRepo).namesOf([...new Set(memberships.map((row) => row.group_id))])
    const index = new Map([...names].map(([groupId, name]) => [groupId, { name }]))
    return rows.map((user) => userRecord(user, byUser.get(user.id) ?? [], index))
  })

/** The user `id` as a record, if there is one. */
export const userRecordOf = (id: string) =>
  Effect.gen(function* () {
    const user = yield* (yield* UserRepo).findById(id)
    if (Option.isNone(user)) return Option.none()
    const [record] = yield* userRecords([user.value])
    return Option.some(record!)
  })

/** The group `id` as a record (with its member count), if there is one. */
export const groupRecordOf = (id: string) =>
  Effect.gen(function* () {
    const group = yield* (yield* GroupRepo).find(id)
    if (group === undefined) return Option.none()
    return Option.some(groupRecord(group, yield* (yield* MembershipRepo).countOf(id)))
  })

export type EffectiveAccessOutcome =
  | { readonly _tag: "Explained"; readonly access: EffectiveAccess }
  | { readonly _tag: "Group" }
  | { readonly _tag: "Missing" }

/**
 * A user's effective access (docs/access-policy.md, "Effective access"): per published tool of this
 * generation, allow or deny and why, from the in-memory policy the requests are decided by.
 */
export const effectiveAccessOf = (id: string) =>
  Effect.gen(function* () {
    const grant = yield* (yield* AccessState).grantOfUser(id)
    if (grant === undefined) {
      const group = yield* (yield* GroupRepo).find(id)
      return (group === undefined ? { _tag: "Missing" } : { _tag: "Group" }) as EffectiveAccessOutcome
    }
    const index = (yield* Backends).index()
    const access = explainAccess(grant, index.endpoints, index.tools, yield* Clock.currentTimeMillis)
    return { _tag: "Explained", access } as EffectiveAccessOutcome
  })
