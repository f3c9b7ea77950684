import { createHash } from "node:crypto"
import { Effect } from "effect"
import { refuse } from "../../policy/refusal.js"
import { PolicyWrites } from "../../policy/writes.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { DirectoryRepo, type NewDirectoryUser } from "../../store/directory.js"
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

/** The digest of a person's directory memberships (internal group ids, in any order). */
const digest = (groupIds: ReadonlyArray<string>) =>
  createHash("sha256")
    .update([...groupIds].sort().join("\n"))
    .digest("base64url")

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
          // memberships differ from what they were last given (their digest) are read and rewritten.
          if (current === undefined) yield* repo.dropClaims(provider)
          const idOf = new Map<string, string>()
          for (const row of known.values()) idOf.set(row.external_subject, row.id)
          for (const person of newcomers) idOf.set(person.subject, person.id)
          const internal = { group: new Map<string, string>(), department: new Map<string, string>() }
          for (const row of groupIds.values()) internal[row.kind].set(row.external_id, row.id)
          const wantedOf = new Map<string, ReadonlyArray<string>>()
          for (const person of snapshot.users) {
            const ids: Array<string> = []
            for (const id of person.groups) ids.push(internal.group.get(id)!)
            for (const id of person.departments) ids.push(internal.department.get(id)!)
            wantedOf.set(idOf.get(person.subject)!, ids)
          }
          const storedHash = new Map<string, string | null>()
          for (const row of known.values()) storedHash.set(row.id, row.directory_hash)
          // Omitted people keep no directory memberships.
          for (const row of known.values()) if (!wantedOf.has(row.id)) wantedOf.set(row.id, [])
          const changed: Array<readonly [string, string | null]> = []
          for (const [userId, ids] of wantedOf) {
            const hash = ids.length === 0 ? null : digest(ids)
            if ((storedHash.get(userId) ?? null) !== hash) changed.push([userId, hash])
          }
          const existing = changed.filter(([userId]) => storedHash.has(userId)).map(([userId]) => userId)
          const have = new Map<string, Set<string>>()
          for (const row of yield* repo.membershipsOf(existing)) {
            const set = have.get(row.user_id) ?? new Set<string>()
            set.add(row.group_id)
            have.set(row.user_id, set)
          }
          const add: Array<readonly [string, string]> = []
          const remove: Array<readonly [string, string]> = []
          // In primary-key order (user, then group): the index pages fill in sequence, not at random.
          const inKeyOrder = changed.map(([userId]) => userId).sort()
          for (const userId of inKeyOrder) {
            const wanted = new Set([...(wantedOf.get(userId) ?? [])].sort())
            const current = have.get(userId) ?? new Set<string>()
            for (const groupId of wanted) if (!current.has(groupId)) add.push([userId, groupId])
            for (const groupId of current) if (!wanted.has(groupId)) remove.push([userId, groupId])
          }
          yield* repo.removeMemberships(remove)
          yield* repo.addMemberships(add, at)
          yield* repo.setHashes(changed)
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
            memberships_added: add.length,
            memberships_removed: remove.length
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
          const touched = new Set([...activate, ...deactivate, ...changed.map(([userId]) => userId)])
          return {
            value: summary,
            // A new group or many people changed: everything is reloaded; else only who changed.
            change: created.length > 0 || touched.size > 1_000 ? { groups: true } : { users: [...touched] },
            event: { name: "directory.snapshot_applied", fields: { ...summary } }
          }
        })
      )
    })

    return { apply } as const
  })
}) {}
