import { Clock, Effect, Option } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import type { AccessEntry, Permissions } from "../policy/permissions.js"
import { EVERY_TOOL } from "../policy/tool-names.js"
import { type Actor, PolicyWrites } from "../policy/writes.js"
import { GroupRepo } from "../store/groups.js"
import { MembershipRepo } from "../store/memberships.js"
import { UserRepo } from "../store/users.js"
import { demoPrompts } from "./notes-server.js"

/** The local user `gateway dev-token` signs tokens for. It has no password: nobody signs in as it. */
export const DEVELOPER_USERNAME = "developer"
/**
 * The permission group of the development setup (docs/access-policy.md, "The development setup"):
 * every configured backend's tools, through `"*"`.
 */
export const DEVELOPMENT_GROUP_NAME = "Every backend (development)"

/** The development setup's reviewers of write approvals: the built-in administrator (docs/approvals.md, "Try it"). */
export const DEMO_APPROVERS_NAME = "Write approvers (development)"

const approverPermissions: Permissions = { roles: ["approver"], scopes: [], access: [] }

const setup: Actor = { userId: "gateway --dev", kind: "builtin_admin" }

/**
 * What the development group grants on one backend: every tool it publishes (`"*"`, writes allowed —
 * `tool_rules` approvals still apply), its resources and subscriptions; the demo's prompt by name, as
 * prompts have no wildcard.
 */
const developmentEntry = (backendId: string): AccessEntry => ({
  endpoint_id: backendId,
  tools: [EVERY_TOOL],
  allow_write_requests: true,
  resource_rules: [],
  prompts: backendId === "demo" ? [...demoPrompts] : [],
  read_resources: true,
  subscribe: true
})

/**
 * DEVELOPMENT ONLY (`gateway serve --dev`, `init-admin --dev`): so that `npm start` shows every
 * configured backend's tools at once — the demo's, and those of a backend a newcomer adds — the
 * development setup creates, through the same policy writes an administrator would make, the local
 * user `developer` (no password) that `gateway dev-token` signs tokens for, and, when any backend is
 * configured, the permission group "Every backend (development)" granting each backend's tools
 * (`"*"`), resources and subscriptions to the developer and to the built-in administrator once it
 * exists, and the group "Write approvers (development)" (role `approver`) for the administrator alone,
 * who then reviews the developer's writes. An existing group keeps what it grants; a backend
 * configured since, which it names in no entry, is added to it (one audited update). Returns the
 * developer's id.
 */
export const ensureDevelopmentAccess = (config: GatewayConfig) =>
  Effect.gen(function* () {
    const users = yield* UserRepo
    const groups = yield* GroupRepo
    const memberships = yield* MembershipRepo
    const writes = yield* PolicyWrites
    const at = new Date(yield* Clock.currentTimeMillis)
    const existing = yield* users.findLocalByUsername(DEVELOPER_USERNAME)
    const developerId = Option.isSome(existing)
      ? existing.value.id
      : yield* users.insertLocal({ kind: "local", username: DEVELOPER_USERNAME, displayName: "Developer", at })
    if (config.backends.length === 0) return developerId
    const found = (yield* groups.list).find(
      (group) => group.kind === "permission" && group.name === DEVELOPMENT_GROUP_NAME
    )
    const groupId =
      found?.id ??
      (yield* writes.createGroup(setup, {
        name: DEVELOPMENT_GROUP_NAME,
        enabled: true,
        permissions: { roles: [], scopes: [], access: config.backends.map((backend) => developmentEntry(backend.id)) },
        sourceGroups: []
      }))
    const granted = found?.permissions ?? null
    if (found !== undefined && granted !== null) {
      const named = new Set(granted.access.map((entry) => entry.endpoint_id))
      const added = config.backends.filter((backend) => !named.has(backend.id))
      if (added.length > 0) {
        yield* writes.updateGroup(setup, found.id, found.revision, {
          permissions: {
            ...granted,
            access: [...granted.access, ...added.map((backend) => developmentEntry(backend.id))]
          }
        })
      }
    }
    const approversId =
      (yield* groups.list).find((group) => group.kind === "permission" && group.name === DEMO_APPROVERS_NAME)?.id ??
      (yield* writes.createGroup(setup, {
        name: DEMO_APPROVERS_NAME,
        enabled: true,
        permissions: approverPermissions,
        sourceGroups: []
      }))
    const admin = Option.toArray(yield* users.findBuiltinAdmin).map((row) => row.id)
    const joins = [
      ...[developerId, ...admin].map((userId) => [userId, groupId] as const),
      ...admin.map((userId) => [userId, approversId] as const)
    ]
    for (const [userId, group] of joins) {
      const rows = yield* memberships.forUser(userId)
      if (rows.some((row) => row.group_id === group)) continue
      const user = Option.getOrThrow(yield* users.findById(userId))
      yield* writes.updateUser(setup, userId, user.revision, {
        groups: [...rows.map((row) => row.group_id), group]
      })
    }
    return developerId
  }).pipe(Effect.orDie, Effect.withSpan("ensureDevelopmentAccess"))
