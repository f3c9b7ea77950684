import { Clock, Effect, Option } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import type { Permissions } from "../policy/permissions.js"
import { type Actor, PolicyWrites } from "../policy/writes.js"
import { GroupRepo } from "../store/groups.js"
import { MembershipRepo } from "../store/memberships.js"
import { UserRepo } from "../store/users.js"
import { demoPrompts, demoTools } from "./notes-server.js"

/** The local user `gateway dev-token` signs tokens for. It has no password: nobody signs in as it. */
export const DEVELOPER_USERNAME = "developer"
/** The permission group of the development setup (docs/access-policy.md, "The development setup"). */
export const DEMO_GROUP_NAME = "Demo notes (development)"

/** The development setup's reviewers of write approvals: the built-in administrator (docs/approvals.md, "Try it"). */
export const DEMO_APPROVERS_NAME = "Write approvers (development)"

const approverPermissions: Permissions = { roles: ["approver"], scopes: [], access: [] }

const setup: Actor = { userId: "gateway --dev", kind: "builtin_admin" }

const demoPermissions: Permissions = {
  roles: [],
  scopes: [],
  access: [
    {
      endpoint_id: "demo",
      tools: [...demoTools],
      allow_write_requests: true,
      resource_rules: [],
      prompts: [...demoPrompts],
      read_resources: true,
      subscribe: true
    }
  ]
}

/**
 * DEVELOPMENT ONLY (`gateway serve --dev`, `init-admin --dev`): so that `npm start`
 * shows the demo tools at once, the development setup creates — once, through the same policy writes
 * an administrator would make — the local user `developer` (no password) that `gateway dev-token`
 * signs tokens for, and, when a backend `demo` is configured, the permission group "Demo notes
 * (development)" granting its tools, prompt and resources to the developer and to the built-in
 * administrator once it exists, and the group "Write approvers (development)" (role `approver`) for
 * the administrator alone, who then reviews the developer's writes. An existing group is left as it
 * is. Returns the developer's id.
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
    if (!config.backends.some((backend) => backend.id === "demo")) return developerId
    const found = (yield* groups.list).find((group) => group.kind === "permission" && group.name === DEMO_GROUP_NAME)
    const groupId =
      found?.id ??
      (yield* writes.createGroup(setup, {
        name: DEMO_GROUP_NAME,
        enabled: true,
        permissions: demoPermissions,
        sourceGroups: []
      }))
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
        enabled: user.status === "enabled",
        groups: [...rows.map((row) => row.group_id), group]
      })
    }
    return developerId
  }).pipe(Effect.orDie, Effect.withSpan("ensureDevelopmentAccess"))
