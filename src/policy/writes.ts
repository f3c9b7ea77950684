import { SqlClient } from "@effect/sql"
import { Clock, Effect, FiberRef, HashMap, Option } from "effect"
import { securityEvent } from "../events/security-log.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { BrowserSessionRepo } from "../store/browser-sessions.js"
import { DirectoryRepo } from "../store/directory.js"
import { EnrolmentLinkRepo } from "../store/enrolment-links.js"
import { GroupRepo, type GroupRow, type OrganizationGroup } from "../store/groups.js"
import { LocalCredentialRepo } from "../store/local-credentials.js"
import { MembershipRepo, type MembershipSource } from "../store/memberships.js"
import { PolicyVersionRepo } from "../store/policy-version.js"
import { SessionRepo } from "../store/sessions.js"
import { UserRepo, type UserRow, type UserStatus } from "../store/users.js"
import { AccessState, type PolicyChange } from "./access-state.js"
import { commitPolicyChange } from "./commit.js"
import { createEnterpriseUser, userCreatedFields } from "./enterprise-user.js"
import { groupNameProblem } from "./group-name.js"
import { keepingLocalAdministrator } from "./last-administrator.js"
import { localAccountStatus } from "./local-account-status.js"
import type { Permissions } from "./permissions.js"
import { type PolicyRefused, refuse } from "./refusal.js"
import { roleScopeNames } from "./roles.js"
import { toolListProblem } from "./tool-names.js"

/** Who makes a change: the administrator's user id and kind (from their verified token). */
export interface Actor {
  readonly userId: string
  readonly kind: UserRow["kind"]
}

export interface UserUpdate {
  /** Omitted keeps the status. A local account's follows its own rules (docs/local-accounts.md). */
  readonly enabled?: boolean
  /** The complete membership list; omitted keeps it. Must retain every upstream-owned group. */
  readonly groups?: ReadonlyArray<string>
}

export interface GroupCreate {
  readonly name: string
  readonly enabled: boolean
  readonly permissions: Permissions
  readonly sourceGroups: ReadonlyArray<string>
}

export interface GroupUpdate {
  readonly name?: string
  readonly enabled?: boolean
  readonly permissions?: Permissions
  readonly sourceGroups?: ReadonlyArray<string>
}

/** Who an enterprise sign-in says signed in (src/identity/upstream), keyed by namespace and subject. */
export interface EnterpriseSignIn {
  readonly namespace: string
  readonly subject: string
  readonly name: string | undefined
  /** Organization groups and departments: their stable id at the upstream and the name shown. */
  readonly groups: ReadonlyArray<OrganizationGroup>
  readonly departments: ReadonlyArray<OrganizationGroup>
  /** The subject is in `auth.sso.bootstrap_subjects`. */
  readonly bootstrap: boolean
}

/** What a policy write did: its result, what the in-memory policy must drop, and its log line. */
export interface PolicyOutcome<A> {
  readonly value: A
  readonly change: PolicyChange
  readonly event?: { readonly name: string; readonly fields: Record<string, unknown> }
}

/** Memberships per user (docs/management-api.md, "Endpoints"). */
export const MAX_MEMBERSHIPS = 256

const requestIdOf = Effect.map(FiberRef.get(FiberRef.currentLogAnnotations), (annotations) =>
  Option.getOrUndefined(HashMap.get(annotations, "request_id"))
)

const stale = (what: string, current: number) =>
  refuse(
    "precondition_failed",
    `The ${what} changed since it was read: its revision is now "${current}". Read it again.`
  )

const same = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && [...a].sort().every((value, index) => value === [...b].sort()[index])

/**
 * Every write to identities and permissions (docs/management-api.md): each runs in one transaction
 * that first bumps `policy_version` (serializing policy writes), applies the change only if the row's
 * revision is still the one the administrator read (`If-Match`), checks that a local administrator
 * remains, and records an audit event; after the commit the in-memory policy drops what it changed,
 * so the next request is decided by the new policy, and one `identity.*` log line is written.
 */
export class PolicyWrites extends Effect.Service<PolicyWrites>()("gateway/PolicyWrites", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const users = yield* UserRepo
    const groups = yield* GroupRepo
    const memberships = yield* MembershipRepo
    const versions = yield* PolicyVersionRepo
    const audit = yield* AuditEventRepo
    const sessions = yield* SessionRepo
    const directory = yield* DirectoryRepo
    const localStatus = localAccountStatus({
      links: yield* EnrolmentLinkRepo,
      credentials: yield* LocalCredentialRepo,
      sessions,
      browserSessions: yield* BrowserSessionRepo
    })
    const state = yield* AccessState
    const roleScopes = new Set(roleScopeNames(state.settings.roleScopes))

    type Outcome<A> = PolicyOutcome<A>

    /** Runs `work` in the policy transaction, then tells the in-memory policy and the log. */
    const transaction = <A>(work: Effect.Effect<Outcome<A>, PolicyRefused, SqlClient.SqlClient>) =>
      Effect.gen(function* () {
        const outcome = yield* commitPolicyChange(work, (done) => done.change).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.provideService(PolicyVersionRepo, versions),
          Effect.provideService(AccessState, state)
        )
        if (outcome.event !== undefined) yield* securityEvent(outcome.event.name, outcome.event.fields)
        return outcome.value
      })

    const record = (actor: Actor | undefined, action: string, kind: "user" | "group", id: string, detail: object) =>
      Effect.gen(function* () {
        const at = new Date(yield* Clock.currentTimeMillis)
        const requestId = yield* requestIdOf
        yield* audit.insert({
          at,
          actorId: actor?.userId,
          action,
          targetKind: kind,
          targetId: id,
          detail: detail as Record<string, unknown>,
          requestId: typeof requestId === "string" ? requestId : undefined
        })
        return {
          name: action,
          fields: { actor: actor?.userId ?? null, target_kind: kind, target_id: id, ...(detail as object) }
        }
      })

    /** Organization groups that may be mapped: existing, not locally managed (`source_groups`). */
    const checkSources = (actor: Actor, sources: ReadonlyArray<string>, before: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        if (same(sources, before)) return
        if (actor.kind !== "builtin_admin") {
          return yield* refuse(
            "builtin_administrator_required",
            "Only the built-in administrator may map organization groups to permission groups."
          )
        }
        const seen = new Set<string>()
        for (const [index, id] of sources.entries()) {
          if (seen.has(id)) return yield* refuse("invalid_request", `source_groups[${index}]: "${id}" is listed twice`)
          seen.add(id)
          const group = yield* groups.find(id)
          if (group === undefined) return yield* refuse("invalid_request", `source_groups[${index}]: no group "${id}"`)
          if (group.managed_locally || group.kind === "permission") {
            return yield* refuse(
              "invalid_request",
              `source_groups[${index}]: "${id}" is a locally managed group; only organization groups and departments can be mapped`
            )
          }
        }
      })

    /**
     * Administrative scopes come only from roles (docs/access-policy.md, "Roles"): a plain `scopes`
     * entry naming one would grant administration past the role, and past the last-administrator rule
     * that counts role holders. Access entries name tools exactly, or `["*"]` alone (src/policy/tool-names.ts).
     */
    const checkPermissions = (permissions: Permissions) =>
      Effect.gen(function* () {
        for (const [index, scope] of permissions.scopes.entries()) {
          if (roleScopes.has(scope)) {
            return yield* refuse(
              "invalid_request",
              `permissions.scopes[${index}]: "${scope}" is an administrative scope; grant it through permissions.roles`
            )
          }
        }
        for (const [index, entry] of permissions.access.entries()) {
          const problem = toolListProblem(entry.tools)
          if (problem !== undefined)
            return yield* refuse("invalid_request", `permissions.access[${index}].tools${problem}`)
        }
      })

    /**
     * Roles on a group mapped from organization groups reach everyone in those groups: like the
     * mapping itself, only the built-in administrator may give such a group roles or map a group that has them.
     */
    const checkMappedRoles = (
      actor: Actor,
      before: { readonly roles: ReadonlyArray<string>; readonly sources: ReadonlyArray<string> },
      after: { readonly roles: ReadonlyArray<string>; readonly sources: ReadonlyArray<string> }
    ) =>
      Effect.gen(function* () {
        if (actor.kind === "builtin_admin" || after.sources.length === 0 || after.roles.length === 0) return
        if (same(before.roles, after.roles) && before.sources.length > 0) return
        return yield* refuse(
          "builtin_administrator_required",
          "Only the built-in administrator may give roles to a permission group mapped from organization groups."
        )
      })

    const nameTaken = (name: string, existing: { readonly name: string }) =>
      refuse(
        "name_taken",
        existing.name === name
          ? `A permission group named "${name}" already exists.`
          : `A permission group named "${existing.name}" already exists; "${name}" reads the same (names are compared ignoring case and Unicode normalization).`
      )

    /**
     * A permission group name may be written (docs/access-policy.md, "Group names"): no invisible or
     * direction-changing characters, no other permission group whose name reads alike (one lookup in
     * the unique index on the name's key) or looks alike (one in the index of UTS #39 skeletons),
     * however many groups there are.
     */
    const nameFree = (name: string, except: string | undefined) =>
      Effect.gen(function* () {
        const problem = groupNameProblem(name)
        if (problem !== undefined) return yield* refuse("invalid_request", `name: ${problem}`)
        const existing = yield* groups.permissionGroupNamedLike(name, except)
        if (existing !== undefined) return yield* nameTaken(name, existing)
        const similar = yield* groups.permissionGroupLookingLike(name, except)
        if (similar !== undefined) {
          return yield* refuse(
            "name_taken",
            `"${name}" looks like the permission group "${similar.name}" (characters that can be mistaken for one another, such as Cyrillic "С" and Latin "C", "rn" and "m", or "l" and "1", are compared as one); choose a name that reads differently.`
          )
        }
      })

    const updateUser = Effect.fn("PolicyWrites.updateUser")(function* (
      actor: Actor,
      id: string,
      expected: number,
      update: UserUpdate
    ) {
      return yield* transaction(
        Effect.gen(function* () {
          const found = yield* users.findById(id)
          if (Option.isNone(found)) return yield* refuse("not_found", `No identity "${id}".`)
          const user = found.value
          if (user.revision !== expected) return yield* stale("identity", user.revision)
          const current = yield* memberships.forUser(id)
          const upstream = current.filter((row) => row.source !== "direct").map((row) => row.group_id)
          const directBefore = current.filter((row) => row.source === "direct").map((row) => row.group_id)
          let direct = directBefore
          if (update.groups !== undefined) direct = yield* directGroups(update.groups, upstream)
          const status = yield* nextStatus(user, update.enabled)
          const at = new Date(yield* Clock.currentTimeMillis)
          const { written, added, removed } = yield* keepingLocalAdministrator(
            Effect.gen(function* () {
              const written = yield* users.updateIfRevision(id, expected, { status }, at)
              if (written._tag !== "Written") return yield* stale("identity", user.revision)
              return { written, ...(yield* memberships.replace(id, "direct", direct, at)) }
            })
          )
          if (status === "disabled" && user.kind === "local") {
            yield* localStatus.afterDisable(user, at)
          } else if (status === "disabled" && user.status !== "disabled") {
            yield* sessions.revokeForUser(id, "user_disabled", at)
          }
          const detail = {
            ...(status === user.status ? {} : { status: { before: user.status, after: status } }),
            ...(added.length + removed.length === 0 ? {} : { groups_added: added, groups_removed: removed }),
            revision: written.revision
          }
          const event = yield* record(actor, "identity.user_updated", "user", id, detail)
          return { value: written.revision, change: { users: [id] }, event }
        })
      )
    })

    /**
     * The status `enabled` asks for; omitted keeps it. A pending enterprise identity stays pending when
     * not enabled. A local account follows LocalAccountAdmin's rules (src/policy/local-account-status.ts):
     * disabling ends its link and every session; enabling one that has not enrolled is refused, since
     * only its enrolment link enables it.
     */
    const nextStatus = (user: UserRow, enabled: boolean | undefined) =>
      Effect.gen(function* () {
        if (enabled === undefined) return user.status
        if (user.kind !== "local") {
          return enabled ? "enabled" : user.status === "pending" ? "pending" : ("disabled" as UserStatus)
        }
        if (!enabled) return "disabled"
        if (user.status === "enabled" || (yield* localStatus.statusOnEnable(user)) === "enabled") return "enabled"
        return yield* refuse(
          "enrolment_pending",
          `The local account "${user.username ?? user.id}" has not finished its enrolment: only its enrolment link enables it. Manage it through /api/v1/local-accounts/${user.id} (POST …/enable lets a disabled account wait for enrolment again; POST …/reset-password gives a new link); send no "enabled" to change only its groups.`
        )
      })

    /** The direct memberships a submitted list means: it must keep every upstream-owned group. */
    const directGroups = (submitted: ReadonlyArray<string>, upstream: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        if (submitted.length > MAX_MEMBERSHIPS) {
          return yield* refuse("invalid_request", `groups: at most ${MAX_MEMBERSHIPS} memberships per identity`)
        }
        const seen = new Set<string>()
        const direct: Array<string> = []
        const upstreamSet = new Set(upstream)
        for (const [index, groupId] of submitted.entries()) {
          if (seen.has(groupId))
            return yield* refuse("invalid_request", `groups[${index}]: "${groupId}" is listed twice`)
          seen.add(groupId)
          if (upstreamSet.has(groupId)) continue
          const group = yield* groups.find(groupId)
          if (group === undefined) return yield* refuse("invalid_request", `groups[${index}]: no group "${groupId}"`)
          if (!group.managed_locally) {
            return yield* refuse(
              "invalid_request",
              `groups[${index}]: "${groupId}" is an organization group; its memberships come from the identity provider or directory`
            )
          }
          direct.push(groupId)
        }
        const dropped = upstream.filter((groupId) => !seen.has(groupId))
        if (dropped.length > 0) {
          return yield* refuse(
            "invalid_request",
            `groups: must keep every upstream-owned group; missing ${dropped.map((groupId) => `"${groupId}"`).join(", ")}`
          )
        }
        return direct
      })

    const createGroup = Effect.fn("PolicyWrites.createGroup")(function* (actor: Actor, create: GroupCreate) {
      return yield* transaction(
        Effect.gen(function* () {
          yield* nameFree(create.name, undefined)
          yield* checkPermissions(create.permissions)
          yield* checkSources(actor, create.sourceGroups, [])
          const at = new Date(yield* Clock.currentTimeMillis)
          const id = yield* groups.insertPermissionGroup({ ...create, at })
          // Only a concurrent writer outside the policy transaction's serialization could get here.
          if (id === undefined) return yield* nameTaken(create.name, { name: create.name })
          const event = yield* record(actor, "identity.group_created", "group", id, {
            name: create.name,
            enabled: create.enabled,
            permissions: create.permissions,
            source_groups: create.sourceGroups
          })
          return { value: id, change: { groups: [id, ...create.sourceGroups] }, event }
        })
      )
    })

    const updateGroup = Effect.fn("PolicyWrites.updateGroup")(function* (
      actor: Actor,
      id: string,
      expected: number,
      update: GroupUpdate
    ) {
      return yield* transaction(
        Effect.gen(function* () {
          const group = yield* groups.find(id)
          if (group === undefined) return yield* refuse("not_found", `No identity "${id}".`)
          if (group.revision !== expected) return yield* stale("group", group.revision)
          yield* checkGroupUpdate(actor, group, update)
          const at = new Date(yield* Clock.currentTimeMillis)
          const written = yield* keepingLocalAdministrator(
            Effect.flatMap(groups.updateIfRevision(id, expected, update, at), (outcome) =>
              outcome._tag === "Written" ? Effect.succeed(outcome) : stale("group", group.revision)
            )
          )
          const event = yield* record(actor, "identity.group_updated", "group", id, {
            ...changed("name", group.name, update.name),
            ...changed("enabled", group.enabled, update.enabled),
            ...changed("permissions", group.permissions, update.permissions),
            ...changed("source_groups", group.source_groups, update.sourceGroups),
            revision: written.revision
          })
          // The group, and the organization groups it is now mapped from (those it was mapped from
          // are known to the in-memory policy already).
          return { value: written.revision, change: { groups: [id, ...(update.sourceGroups ?? [])] }, event }
        })
      )
    })

    const checkGroupUpdate = (actor: Actor, group: GroupRow, update: GroupUpdate) =>
      Effect.gen(function* () {
        if (group.kind !== "permission") {
          const field =
            update.name !== undefined ? "name" : update.permissions !== undefined ? "permissions" : "source_groups"
          if (update.name !== undefined || update.permissions !== undefined || update.sourceGroups !== undefined) {
            return yield* refuse(
              "invalid_request",
              `${field}: "${group.id}" is an organization ${group.kind}; only "enabled" can be changed here`
            )
          }
          return
        }
        if (group.builtin !== null) {
          const fixed =
            (update.name !== undefined && update.name !== group.name) ||
            update.permissions !== undefined ||
            (update.sourceGroups !== undefined && update.sourceGroups.length > 0)
          if (fixed) {
            return yield* refuse(
              "builtin_group",
              `The built-in ${group.name} group grants administration and no business tools; only "enabled" can be changed.`
            )
          }
        }
        if (update.name !== undefined && update.name !== group.name) yield* nameFree(update.name, group.id)
        if (update.permissions !== undefined) yield* checkPermissions(update.permissions)
        if (update.sourceGroups !== undefined) yield* checkSources(actor, update.sourceGroups, group.source_groups)
        const before = { roles: group.permissions?.roles ?? [], sources: group.source_groups }
        yield* checkMappedRoles(actor, before, {
          roles: update.permissions?.roles ?? before.roles,
          sources: update.sourceGroups ?? before.sources
        })
      })

    /**
     * Replaces the upstream-owned memberships of a user with what sign-in claims assert (organization
     * groups only), and records when they were verified. Directory snapshots write theirs in bulk
     * (src/identity/directory/apply.ts).
     */
    const setUpstreamMemberships = Effect.fn("PolicyWrites.setUpstreamMemberships")(function* (
      userId: string,
      source: Exclude<MembershipSource, "direct" | "directory">,
      groupIds: ReadonlyArray<string>,
      verifiedAt: Date
    ) {
      return yield* transaction(
        Effect.gen(function* () {
          yield* memberships.replace(userId, source, groupIds, verifiedAt)
          yield* users.setUpstreamState(userId, { verifiedAt })
          return { value: undefined, change: { users: [userId] } }
        })
      )
    })

    /**
     * An enterprise sign-in (docs/enterprise-sign-in.md, "Identities"): finds the user by namespace and
     * subject, or creates them — pending, or for a `bootstrap_subjects` entry enabled and in the built-in
     * Administrators group, at this first creation only — then refreshes the display name and replaces
     * the upstream-owned memberships with the groups and departments the sign-in asserted. Local status,
     * roles and direct memberships are never changed here. Answers the user as stored afterwards.
     */
    const admitEnterpriseUser = Effect.fn("PolicyWrites.admitEnterpriseUser")(function* (
      identity: EnterpriseSignIn,
      at: Date
    ) {
      return yield* transaction(
        Effect.gen(function* () {
          const found = yield* users.findEnterprise(identity.namespace, identity.subject)
          const name = identity.name ?? identity.subject
          let id: string
          let event: Outcome<unknown>["event"]
          if (Option.isNone(found)) {
            const created = {
              namespace: identity.namespace,
              subject: identity.subject,
              displayName: name,
              bootstrap: identity.bootstrap
            }
            id = yield* createEnterpriseUser({ users, memberships, audit }, created, at)
            event = { name: "identity.user_created", fields: userCreatedFields(id, created) }
          } else {
            id = found.value.id
            yield* users.setDisplayName(id, name, at)
          }
          // A provider whose directory pushes snapshots owns its people's memberships and activity
          // there (docs/directory.md): sign-in neither changes them nor counts as verifying them, and
          // someone the directory has not listed yet is inactive.
          const directoryMode = (yield* directory.version(identity.namespace)) !== undefined
          let touchedGroups: ReadonlyArray<string> = []
          if (directoryMode) {
            if (Option.isNone(found)) yield* users.setUpstreamState(id, { directoryActive: false })
          } else {
            const groupIds = yield* groups.upsertOrganizationGroups(identity.namespace, "group", identity.groups, at)
            const departmentIds = yield* groups.upsertOrganizationGroups(
              identity.namespace,
              "department",
              identity.departments,
              at
            )
            // Created or renamed by this sign-in: the in-memory policy reloads just these.
            touchedGroups = [...groupIds, ...departmentIds]
            yield* memberships.replace(id, "claims", [...groupIds, ...departmentIds], at)
            yield* users.setUpstreamState(id, { verifiedAt: at })
          }
          const user = yield* users.findById(id)
          return {
            value: Option.getOrThrow(user),
            change: { users: [id], ...(touchedGroups.length > 0 ? { groups: touchedGroups } : {}) },
            ...(event === undefined ? {} : { event })
          }
        })
      )
    })

    return {
      updateUser,
      createGroup,
      updateGroup,
      setUpstreamMemberships,
      admitEnterpriseUser,
      /** Another policy write (a directory snapshot) in the same transaction discipline. */
      run: transaction
    } as const
  })
}) {}

const changed = (field: string, before: unknown, after: unknown) =>
  after === undefined || JSON.stringify(before) === JSON.stringify(after) ? {} : { [field]: { before, after } }
