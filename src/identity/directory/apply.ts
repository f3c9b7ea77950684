import { createHash } from "node:crypto"
import { Effect } from "effect"
import { refuse } from "../../policy/refusal.js"
import { PolicyWrites } from "../../policy/writes.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { DirectoryRepo, type MembershipList, type NewDirectoryUser } from "../../store/directory.js"
import { SessionCache } from "../../store/session-cache.js"
import { newUserId } from "../../store/users.js"
import type { Snapshot } from "./snapshot.js"

/** What an applied snapshot changed: the success answer and the `directory.snapshot_applied` line. */
export interface AppliedSnapshot {
  readonly provider: string
  readonly version: number
  readonly users: number
  readonly groups: number
  readonly departments: number
  readonly created: number
  readonly activated: number
  readonly deactivated: number
  readonly memberships_added: number
  readonly memberships_removed: number
}

/** An administrator's reset of a provider's directory version: from `expected` (what they read) to `next`. */
export interface VersionReset {
  readonly provider: string
  readonly connection: string
  readonly expected: number
  readonly next: number
  readonly actorId: string
  readonly requestId: string | undefined
  readonly at: Date
}

/** The digest of a person's directory memberships (internal group ids, sorted). */
const digest = (sortedGroupIds: ReadonlyArray<string>) =>
  createHash("sha256").update(sortedGroupIds.join("\n")).digest("base64url")

/**
 * Applies a checked snapshot for `provider` (an identity connection's namespace) as one complete
 * replacement, in one policy transaction (docs/directory.md, "Applying"): the version must exceed the
 * last one (else `stale_version`, nothing written); organization groups are created or renamed;
 * people it names but the gateway never saw are created pending; everyone of the namespace it omits or
 * marks inactive becomes inactive, the others active; their directory memberships become exactly the
 * snapshot's (only the differences are written), sign-in claims of the namespace are dropped, and
 * membership is verified now. Local status, roles, direct memberships and locally managed groups are
 * never touched. Requests see the old policy until the commit, then the new one.
 */
export class DirectorySnapshots extends Effect.Service<DirectorySnapshots>()("gateway/DirectorySnapshots", {
  effect: Effect.gen(function* () {
    const writes = yield* PolicyWrites
    const repo = yield* DirectoryRepo
    const audit = yield* AuditEventRepo
    const cache = yield* SessionCache

    const apply = Effect.fn("DirectorySnapshots.apply")(function* (provider: string, snapshot: Snapshot, at: Date) {
      return yield* writes.run(
        Effect.gen(function* () {
          const current = yield* repo.version(provider)
          if (current !== undefined && snapshot.version <= current) {
            return yield* refuse(
              "stale_version",
              `version ${snapshot.version} is not newer than the last applied version ${current} for this provider`
            )
          }

          // Organization groups: by (kind, external id); new ones created, renamed ones renamed.
          const existingGroups = yield* repo.organizationGroups(provider)
          const groupIds = new Map(existingGroups.map((row) => [`${row.kind}:${row.external_id}`, row]))
          const missing = snapshot.groups.filter((group) => !groupIds.has(`${group.kind}:${group.id}`))
          for (const group of snapshot.groups) {
            const row = groupIds.get(`${group.kind}:${group.id}`)
            if (row !== undefined && row.name !== group.name) yield* repo.renameGroup(row.id, group.name, at)
          }
          const created = yield* repo.insertGroups(
            provider,
            missing.map((group) => ({ kind: group.kind, externalId: group.id, name: group.name })),
            at
          )
          for (const group of created) {
            groupIds.set(`${group.kind}:${group.externalId}`, {
              id: group.id,
              kind: group.kind,
              external_id: group.externalId,
              name: group.name
            })
          }

          // People: found by subject; the unknown ones created pending (never as bootstrap administrators).
          const known = new Map((yield* repo.users(provider)).map((row) => [row.external_subject, row]))
          const newcomers: Array<NewDirectoryUser> = []
          let createdCount = 0
          for (const person of snapshot.users) {
            if (known.has(person.subject)) continue
            createdCount++
            newcomers.push({
              id: newUserId(),
              subject: person.subject,
              name: person.name ?? person.subject,
              active: person.active
            })
          }
          yield* repo.insertUsers(provider, newcomers, at)

          // Activity: exactly the snapshot's; everyone it omits is inactive.
          const listed = new Map(snapshot.users.map((person) => [person.subject, person]))
          const activate: Array<string> = []
          const deactivate: Array<string> = []
          for (const row of known.values()) {
            const person = listed.get(row.external_subject)
            const active = person?.active === true
            if (active !== row.directory_active) (active ? activate : deactivate).push(row.id)
            if (person?.name !== undefined && person.name !== row.display_name) yield* repo.setName(row.id, person.name)
          }
          yield* repo.setActive(activate, true)
          yield* repo.setActive(deactivate, false)

          // Memberships: claims give way to the directory; then only the people whose directory
          // memberships differ from what they were last given (their digest) are rewritten, one row each.
          if (current === undefined) yield* repo.dropClaims(provider)
          const idOf = new Map<string, string>()
          for (const row of known.values()) idOf.set(row.external_subject, row.id)
          for (const person of newcomers) idOf.set(person.subject, person.id)
          // Group ids by rank in their sorted order: each person's list sorts as numbers, and reads
          // back as ids in string order (the order the digest and the stored row use).
          const ranked = [...groupIds.values()].map((row) => row.id).sort()
          const rankOf = new Map(ranked.map((id, rank) => [id, rank]))
          const internal = { group: new Map<string, number>(), department: new Map<string, number>() }
          for (const row of groupIds.values()) internal[row.kind].set(row.external_id, rankOf.get(row.id)!)
          const NONE = new Int32Array(0)
          const wantedOf = new Map<string, Int32Array>()
          for (const person of snapshot.users) {
            const ranks = new Int32Array(person.groups.length + person.departments.length)
            let filled = 0
            for (const [kind, ids] of [
              ["group", person.groups],
              ["department", person.departments]
            ] as const) {
              for (const id of ids) {
                const rank = internal[kind].get(id)
                // The check (snapshot.ts) refuses undeclared ids; should one slip through, the apply is
                // rolled back rather than the 0 a typed array would store for it granting a group.
                if (rank === undefined)
                  return yield* Effect.die(new Error(`directory apply: ${kind} "${id}" has no group`))
                ranks[filled++] = rank
              }
            }
            wantedOf.set(idOf.get(person.subject)!, ranks.sort())
          }
          const storedHash = new Map<string, string | null>()
          for (const row of known.values()) storedHash.set(row.id, row.directory_hash)
          // Omitted people keep no directory memberships.
          for (const row of known.values()) if (!wantedOf.has(row.id)) wantedOf.set(row.id, NONE)
          const changed: Array<MembershipList> = []
          for (const [userId, ranks] of wantedOf) {
            const ids = Array.from(ranks, (rank) => ranked[rank]!)
            const hash = ids.length === 0 ? null : digest(ids)
            if ((storedHash.get(userId) ?? null) !== hash) changed.push({ userId, groupIds: ids, hash })
          }
          // Only the changed people who had directory memberships are read back, for the counts.
          const before = yield* repo.membershipsOf(
            changed.filter((list) => (storedHash.get(list.userId) ?? null) !== null).map((list) => list.userId)
          )
          let added = 0
          let removed = 0
          for (const list of changed) {
            const previous = before.get(list.userId)
            if (previous === undefined) {
              added += list.groupIds.length
              continue
            }
            const had = new Set(previous)
            const wanted = new Set(list.groupIds)
            for (const groupId of wanted) if (!had.has(groupId)) added++
            for (const groupId of had) if (!wanted.has(groupId)) removed++
          }
          yield* repo.replaceMemberships(changed, at)
          const listedIds = snapshot.users.map((person) => idOf.get(person.subject)!)
          yield* repo.setVerified(listedIds, at)

          const summary: AppliedSnapshot = {
            provider,
            version: snapshot.version,
            users: snapshot.users.length,
            groups: snapshot.groups.filter((group) => group.kind === "group").length,
            departments: snapshot.groups.filter((group) => group.kind === "department").length,
            created: createdCount,
            activated: activate.length,
            deactivated: deactivate.length,
            memberships_added: added,
            memberships_removed: removed
          }
          yield* repo.recordVersion(provider, snapshot.version, summary, at)
          yield* audit.insert({
            at,
            actorId: undefined,
            action: "directory.snapshot_applied",
            targetKind: "directory",
            targetId: provider,
            detail: { ...summary },
            requestId: undefined
          })
          for (const id of [...activate, ...deactivate]) yield* cache.forgetUser(id)
          const touched = new Set([...activate, ...deactivate, ...changed.map((list) => list.userId)])
          return {
            value: summary,
            // A new group or many people changed: everything is reloaded; else only who changed.
            change: created.length > 0 || touched.size > 1_000 ? { groups: true } : { users: [...touched] },
            event: { name: "directory.snapshot_applied", fields: { ...summary } }
          }
        })
      )
    })

    /**
     * An administrator lowers a provider's version (docs/directory.md, "Resetting a provider's
     * version"): only while it is still `expected` (what they read), only downwards, and only for a
     * provider a snapshot was applied to — the row stays, so the provider keeps taking memberships from
     * snapshots and nobody's access changes. In the policy transaction, so it is serialized with pushes
     * (a push and a reset never interleave); an audit row in the same transaction, then one
     * `directory.version_reset` line.
     */
    const resetVersion = Effect.fn("DirectorySnapshots.resetVersion")(function* (reset: VersionReset) {
      const { provider, connection, expected, next } = reset
      return yield* writes.run(
        Effect.gen(function* () {
          const current = yield* repo.version(provider)
          if (current === undefined) {
            return yield* refuse(
              "not_found",
              `No directory snapshot was applied to the ${connection} connection: its version is not set.`
            )
          }
          if (current !== expected) {
            return yield* refuse(
              "precondition_failed",
              `The ${connection} connection's directory version is ${current}, not ${expected}: a push or another reset came first. Read it again.`
            )
          }
          if (next >= current) {
            return yield* refuse(
              "invalid_request",
              `version: ${next} is not lower than the current version ${current} (a reset only lowers it; pushes raise it)`
            )
          }
          yield* repo.resetVersion(provider, expected, next)
          const detail = { connection, provider, from: current, to: next }
          yield* audit.insert({
            at: reset.at,
            actorId: reset.actorId,
            action: "directory.version_reset",
            targetKind: "directory",
            targetId: provider,
            detail,
            requestId: reset.requestId
          })
          return {
            value: { from: current, to: next },
            change: {},
            event: { name: "directory.version_reset", fields: { actor: reset.actorId, ...detail } }
          }
        })
      )
    })

    return { apply, resetVersion } as const
  })
}) {}
