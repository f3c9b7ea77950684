import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import type { Caller } from "../bearer/caller.js"
import { securityEvent } from "../events/security-log.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { GROUP_SLICE, GroupRepo, type GroupRow } from "../store/groups.js"
import { MembershipRepo } from "../store/memberships.js"
import { PolicyVersionRepo } from "../store/policy-version.js"
import { UserRepo } from "../store/users.js"
import { createEnterpriseUser, userCreatedFields } from "./enterprise-user.js"
import { buildGrant, type Grant, type GrantSettings, type GroupIndex, indexGroups } from "./grant.js"

/** How the stored identity of a caller is found (src/policy/identity-key.ts). */
export interface AccessSettings extends GrantSettings {
  /** `auth.mode: external`: the namespace of the issuer's subjects; undefined in builtin mode. */
  readonly externalNamespace: string | undefined
  /** `auth.sso.bootstrap_subjects`: join the Administrators group when first seen. */
  readonly bootstrapSubjects: ReadonlySet<string>
}

export class AccessSettingsTag extends Context.Tag("gateway/AccessSettings")<AccessSettingsTag, AccessSettings>() {}

/** What a write changed, so the state drops exactly what it derived from it. */
export interface PolicyChange {
  readonly users?: ReadonlyArray<string>
  /**
   * Groups whose stored row was created or changed — reloaded alone, and the grants that read them
   * dropped — or `true`: every group (reloaded whole, a slice at a time, every grant dropped). A
   * permission group's change lists the organization groups it is newly mapped from as well.
   */
  readonly groups?: true | ReadonlyArray<string>
  /** The `policy_version` the write committed (absent: unknown, everything is reloaded). */
  readonly version?: number
}

/**
 * The stored policy as requests read it: every group, and per user their memberships and the Grant
 * derived from both. Process-wide (users and groups do not depend on the configuration generation).
 *
 * Nothing here is a round trip per request: users are loaded on first use and kept until a write
 * touches them. Every write in this process reports what it changed (`changed`), which drops the
 * derived entries before the writer answers, so the next request already sees the change; writes by
 * another process (`gateway init-admin`) are noticed through `policy_version` within `POLL_INTERVAL`.
 * A load that an invalidation overtook is not kept, so a stale entry can never hide a change.
 *
 * A write costs what it changed (docs/decisions.md, "Policy writes cost what they change"): a changed
 * group is marked and reloaded alone before the next read of the groups, and only the grants that read
 * it (its members', and those of the members of the organization groups mapped onto it) are dropped.
 * Loading every group — at start, after a write by another process — reads them a slice at a time,
 * the event loop free between slices.
 */
export class AccessState extends Context.Tag("gateway/AccessState")<
  AccessState,
  {
    /** The caller's stored identity and access; undefined when the caller has no identity here. */
    readonly grantFor: (caller: Caller) => Effect.Effect<Grant | undefined>
    readonly grantOfUser: (userId: string) => Effect.Effect<Grant | undefined>
    readonly groups: Effect.Effect<GroupIndex>
    /** Bumped by every change: views derived before a change are rebuilt after it. */
    readonly epoch: () => number
    /** Drops what `change` invalidates and tells the listeners (in-flight work re-checks itself). */
    readonly changed: (change: PolicyChange) => Effect.Effect<void>
    /** Runs `listener` after every change; returns the unsubscribe. */
    readonly onChange: (listener: () => void) => () => void
    readonly settings: AccessSettings
  }
>() {}

const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Lets other work run between two slices of a long load. */
const nextTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** How often a running gateway looks for policy writes made by another process. */
export const POLL_INTERVAL = Duration.seconds(5)
const MAX_USERS = 50_000

export const AccessStateLive = Layer.scoped(
  AccessState,
  Effect.gen(function* () {
    const settings = yield* AccessSettingsTag
    const sql = yield* SqlClient.SqlClient
    const audit = yield* AuditEventRepo
    const users = yield* UserRepo
    const groupRepo = yield* GroupRepo
    const memberships = yield* MembershipRepo
    const versions = yield* PolicyVersionRepo

    let epoch = 0
    /** Every group as last read; undefined: to be loaded whole. The index is derived from it. */
    let groupRows: ReadonlyMap<string, GroupRow> | undefined
    let groupIndex: GroupIndex | undefined
    /** Raised by every change of all groups: a whole load it overtook is not kept. */
    let wholeGeneration = 0
    /** Groups changed since they were read → the epoch of their latest change. */
    const dirty = new Map<string, number>()
    const grants = new Map<string, Grant>()
    /** Group id → the users whose kept grant read it; and user → the groups it read. */
    const dependents = new Map<string, Set<string>>()
    const readsOf = new Map<string, ReadonlyArray<string>>()
    /** External subjects already resolved to a user id (external mode). */
    const externalIds = new Map<string, string>()
    const listeners = new Set<() => void>()
    let seenVersion = yield* versions.current

    const forgetGrant = (userId: string) => {
      grants.delete(userId)
      for (const groupId of readsOf.get(userId) ?? []) {
        const users = dependents.get(groupId)
        users?.delete(userId)
        if (users?.size === 0) dependents.delete(groupId)
      }
      readsOf.delete(userId)
    }
    const forgetAllGrants = () => {
      grants.clear()
      dependents.clear()
      readsOf.clear()
    }
    const keepGrant = (userId: string, grant: Grant, reads: ReadonlyArray<string>) => {
      if (grants.size >= MAX_USERS) forgetAllGrants()
      forgetGrant(userId)
      grants.set(userId, grant)
      readsOf.set(userId, reads)
      for (const groupId of reads) {
        const users = dependents.get(groupId)
        if (users === undefined) dependents.set(groupId, new Set([userId]))
        else users.add(userId)
      }
    }
    /** A group changed: reloaded before the groups are read next; the grants that read it dropped. */
    const markGroup = (groupId: string) => {
      dirty.set(groupId, epoch)
      // Its members, and the members of the organization groups it is mapped from (whatever the
      // index lists as mapped): enabling, disabling or re-permissioning it reaches them too.
      for (const read of [groupId, ...(groupRows?.get(groupId)?.source_groups ?? [])]) {
        for (const userId of [...(dependents.get(read) ?? [])]) forgetGrant(userId)
      }
    }
    const forgetAllGroups = () => {
      groupRows = undefined
      groupIndex = undefined
      dirty.clear()
      wholeGeneration += 1
      forgetAllGrants()
    }

    // In the order the groups were always listed (kind, name, id): the order of a grant's sources.
    const indexOf = (rows: ReadonlyMap<string, GroupRow>) =>
      indexGroups(
        [...rows.values()].sort((a, b) => order(a.kind, b.kind) || order(a.name, b.name) || order(a.id, b.id))
      )

    /** Every group, a slice at a time; kept unless a change of all groups overtook it. */
    const loadWhole = Effect.gen(function* () {
      const started = epoch
      const generation = wholeGeneration
      const rows = new Map<string, GroupRow>()
      for (let after = ""; ; ) {
        const slice = yield* groupRepo.slice(after)
        for (const row of slice) rows.set(row.id, row)
        if (slice.length < GROUP_SLICE) break
        after = slice[slice.length - 1]!.id
        yield* nextTurn
      }
      const index = indexOf(rows)
      if (generation !== wholeGeneration) return { index, kept: false }
      groupRows = rows
      groupIndex = index
      // Changes before the load began are in what it read; later ones stay marked, read again next.
      for (const [groupId, changedAt] of dirty) if (changedAt <= started) dirty.delete(groupId)
      return { index, kept: true }
    })

    /** The marked groups read again (one query), unless marked again meanwhile. */
    const refreshMarked = Effect.gen(function* () {
      const marks = new Map(dirty)
      const generation = wholeGeneration
      const rows = new Map((yield* groupRepo.findMany([...marks.keys()])).map((row) => [row.id, row]))
      if (groupRows === undefined || generation !== wholeGeneration) return
      const next = new Map(groupRows)
      for (const [groupId, changedAt] of marks) {
        if (dirty.get(groupId) !== changedAt) continue
        const row = rows.get(groupId)
        if (row === undefined) next.delete(groupId)
        else next.set(groupId, row)
        dirty.delete(groupId)
      }
      groupRows = next
      groupIndex = indexOf(next)
    })

    const groups: Effect.Effect<GroupIndex> = Effect.gen(function* () {
      for (let attempt = 1; ; attempt++) {
        if (groupRows === undefined || groupIndex === undefined) {
          const { index, kept } = yield* loadWhole
          // Overtaken again and again by changes of every group: answer with what was read (as of now).
          if (!kept && attempt >= 3) return index
          continue
        }
        if (dirty.size === 0 || attempt > 3) return groupIndex
        yield* refreshMarked
      }
    })

    /** The groups `grant` read: its memberships' groups and the permission groups mapped onto them. */
    const readsOfGrant = (rows: ReadonlyArray<{ readonly group_id: string }>, index: GroupIndex) => {
      const reads = new Set<string>()
      for (const row of rows) {
        reads.add(row.group_id)
        for (const mapped of index.mappedBy.get(row.group_id) ?? []) reads.add(mapped.id)
      }
      return [...reads]
    }

    const loadGrant = (userId: string) =>
      Effect.gen(function* () {
        const started = epoch
        const user = yield* users.findById(userId)
        if (Option.isNone(user)) return undefined
        const rows = yield* memberships.forUser(userId)
        const index = yield* groups
        const grant = buildGrant(user.value, rows, index, settings)
        if (epoch === started) keepGrant(userId, grant, readsOfGrant(rows, index))
        return grant
      })

    const grantOfUser = (userId: string): Effect.Effect<Grant | undefined> => {
      const cached = grants.get(userId)
      return cached === undefined ? loadGrant(userId) : Effect.succeed(cached)
    }

    /**
     * External mode: the issuer's subject is looked up in its namespace; a subject seen for the first
     * time becomes a pending enterprise identity an administrator can enable (docs/access-policy.md,
     * "External mode"). A subject listed in `auth.sso.bootstrap_subjects` is created enabled, in the Administrators
     * group instead (which grants no business tools). Two first requests at once create one identity.
     */
    const externalUserId = (namespace: string, subject: string) =>
      Effect.gen(function* () {
        const known = externalIds.get(subject)
        if (known !== undefined) return known
        const found = yield* users.findEnterprise(namespace, subject)
        const id = Option.isSome(found) ? found.value.id : yield* provision(namespace, subject)
        if (externalIds.size >= MAX_USERS) externalIds.clear()
        externalIds.set(subject, id)
        return id
      })

    const provision = (namespace: string, subject: string) =>
      Effect.gen(function* () {
        const bootstrap = settings.bootstrapSubjects.has(subject)
        const at = new Date(yield* Clock.currentTimeMillis)
        const created = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const version = yield* versions.bump
              const id = yield* createEnterpriseUser(
                { users, memberships, audit },
                { namespace, subject, displayName: subject, bootstrap },
                at
              )
              return { id, version }
            })
          )
          .pipe(
            Effect.map(Option.some),
            // The repositories turn a refused INSERT into a defect; the unique identity key is the likely one.
            Effect.catchAll(() => Effect.succeed(Option.none<{ id: string; version: number }>())),
            Effect.catchAllDefect(() => Effect.succeed(Option.none<{ id: string; version: number }>()))
          )
        if (Option.isNone(created)) {
          // Another request created it first (the unique identity key refused this one).
          const existing = yield* users.findEnterprise(namespace, subject)
          return Option.getOrThrowWith(existing, () => new Error("enterprise identity could not be created")).id
        }
        // Told like any other write, so the poll does not take this process's own insert for a
        // foreign change and reload everything (one reload per new subject would be a lever for load).
        yield* changed({ users: [created.value.id], version: created.value.version })
        yield* securityEvent(
          "identity.user_created",
          userCreatedFields(created.value.id, { namespace, subject, displayName: subject, bootstrap })
        )
        return created.value.id
      })

    const notify = () => {
      for (const listener of listeners) listener()
    }

    const changed = (change: PolicyChange) =>
      Effect.sync(() => {
        epoch += 1
        const everything = change.version === undefined
        if (everything || change.groups === true) forgetAllGroups()
        else for (const id of change.groups ?? []) markGroup(id)
        if (everything) externalIds.clear()
        for (const id of change.users ?? []) forgetGrant(id)
        if (change.version !== undefined && change.version > seenVersion) {
          // A version this process did not write lies between: another process changed something
          // the poll has not seen yet, and moving past it would hide that change for good.
          if (change.version !== seenVersion + 1) {
            forgetAllGroups()
            externalIds.clear()
          }
          seenVersion = change.version
        }
        notify()
      })

    // Writes by another process: compare the stored version now and then; any difference reloads all.
    // On the live clock even under TestClock: a poll is not an expiry, and a test moving time by hours
    // would otherwise run thousands of polls.
    yield* versions.current.pipe(
      Effect.flatMap((version) =>
        version === seenVersion
          ? Effect.void
          : Effect.zipRight(
              changed({}),
              Effect.sync(() => {
                seenVersion = version
              })
            )
      ),
      Effect.catchAllDefect(() => Effect.void),
      Effect.repeat(Schedule.spaced(POLL_INTERVAL)),
      Effect.withClock(Clock.make()),
      Effect.forkScoped
    )

    return {
      grantFor: (caller) =>
        settings.externalNamespace === undefined
          ? grantOfUser(caller.subject)
          : Effect.flatMap(externalUserId(settings.externalNamespace, caller.subject), grantOfUser),
      grantOfUser,
      groups,
      epoch: () => epoch,
      changed,
      onChange: (listener) => {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      settings
    }
  })
)
