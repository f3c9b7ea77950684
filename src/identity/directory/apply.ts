import { Effect } from "effect"
import { createEnterpriseUser } from "../../policy/enterprise-user.js"
import { refuse } from "../../policy/refusal.js"
import { PolicyWrites } from "../../policy/writes.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { DirectoryRepo, type NewDirectoryUser } from "../../store/directory.js"
import { MembershipRepo } from "../../store/memberships.js"
import { SessionCache } from "../../store/session-cache.js"
import { newUserId, UserRepo } from "../../store/users.js"
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

const pairKey = (userId: string, groupId: string) => `${userId}\u0000${groupId}`

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
    const users = yield* UserRepo
    const memberships = yield* MembershipRepo
    const audit = yield* AuditEventRepo
    const cache = yield* SessionCache

    const apply = Effect.fn("DirectorySnapshots.apply")(function* (
      provider: string,
      snapshot: Snapshot,
      bootstrapSubjects: ReadonlySet<string>,
      at: Date
    ) {
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

          // People: found by subject; the unknown ones created pending (a bootstrap subject as at sign-in).
          const known = new Map((yield* repo.users(provider)).map((row) => [row.external_subject, row]))
          const newcomers: Array<NewDirectoryUser> = []
          let createdCount = 0
          for (const person of snapshot.users) {
            if (known.has(person.subject)) continue
            createdCount++
            if (bootstrapSubjects.has(person.subject)) {
              const id = yield* createEnterpriseUser(
                { users, memberships, audit },
                {
                  namespace: provider,
                  subject: person.subject,
                  displayName: person.name ?? person.subject,
                  bootstrap: true
                },
                at
              )
              yield* repo.setActive([id], person.active)
              known.set(person.subject, {
                id,
                external_subject: person.subject,
                display_name: person.name ?? person.subject,
                directory_active: person.active
              })
              continue
            }
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

          // Memberships: the differences only; claims give way to the directory.
          yield* repo.dropClaims(provider)
          const idOf = new Map(known)
          for (const person of newcomers) {
            idOf.set(person.subject, {
              id: person.id,
              external_subject: person.subject,
              display_name: person.name,
              directory_active: person.active
            })
          }
          const wanted = new Set<string>()
          const add: Array<readonly [string, string]> = []
          for (const person of snapshot.users) {
            const userId = idOf.get(person.subject)!.id
            const ids = [
              ...person.groups.map((id) => groupIds.get(`group:${id}`)!.id),
              ...person.departments.map((id) => groupIds.get(`department:${id}`)!.id)
            ]
            for (const groupId of ids) wanted.add(pairKey(userId, groupId))
          }
          const have = new Set<string>()
          const remove = new Map<string, Array<string>>()
          for (const row of yield* repo.memberships(provider)) {
            const key = pairKey(row.user_id, row.group_id)
            have.add(key)
            if (!wanted.has(key)) remove.set(row.user_id, [...(remove.get(row.user_id) ?? []), row.group_id])
          }
          for (const key of wanted) {
            if (have.has(key)) continue
            const [userId = "", groupId = ""] = key.split("\u0000")
            add.push([userId, groupId])
          }
          let removedCount = 0
          for (const ids of remove.values()) removedCount += ids.length
          yield* repo.removeMemberships(remove)
          yield* repo.addMemberships(add, at)
          const listedIds = snapshot.users.map((person) => idOf.get(person.subject)!.id)
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
            memberships_removed: removedCount
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
          const touched = new Set([...activate, ...deactivate, ...remove.keys(), ...add.map(([userId]) => userId)])
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
