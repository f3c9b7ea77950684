import { Schema } from "effect"
import { groupNameProblem } from "../policy/group-name.js"
import { Permissions, Role } from "../policy/permissions.js"

/**
 * The Management API's documents (docs/management-api.md): what reads return and writes accept. Bodies
 * are decoded strictly (unknown keys refused) by src/admin/body.ts; these schemas also feed the
 * generated OpenAPI document.
 */

const Timestamp = Schema.String.annotations({ description: "RFC 3339 time, UTC" })
const Revision = Schema.String.annotations({ description: "Send it back as If-Match to change this record" })

export const MembershipRecord = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** `direct`: set by an administrator; `claims` / `directory`: owned by the upstream that asserted it. */
  source: Schema.Literal("direct", "claims", "directory")
})

export const UserRecord = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("user"),
  kind: Schema.Literal("builtin_admin", "local", "enterprise"),
  username: Schema.NullOr(Schema.String),
  display_name: Schema.String,
  status: Schema.Literal("pending", "enabled", "disabled"),
  enabled: Schema.Boolean,
  directory_active: Schema.Boolean,
  groups: Schema.Array(MembershipRecord),
  membership_verified_at: Schema.NullOr(Timestamp),
  namespace: Schema.NullOr(Schema.String),
  external_subject: Schema.NullOr(Schema.String),
  revision: Revision,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "User" })
export type UserRecord = typeof UserRecord.Type

export const GroupRecord = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("group"),
  name: Schema.String,
  provider: Schema.String,
  kind: Schema.Literal("permission", "group", "department"),
  external_id: Schema.NullOr(Schema.String),
  managed_locally: Schema.Boolean,
  builtin: Schema.NullOr(Schema.String),
  enabled: Schema.Boolean,
  source_groups: Schema.Array(Schema.String),
  permissions: Schema.NullOr(Permissions),
  members: Schema.Number,
  revision: Revision,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Group" })
export type GroupRecord = typeof GroupRecord.Type

export const IdentityList = Schema.Struct({
  users: Schema.Array(UserRecord),
  groups: Schema.Array(GroupRecord),
  /** Pass as `cursor` for the next page of users; absent on the last page. */
  next_cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "IdentityList" })

/**
 * Query parameters are taken as they come (a repeated one as a list) and judged by the handler
 * (`pageParams`), so a bad one is answered with the API's own error body, naming it.
 */
const QueryValue = Schema.Union(Schema.String, Schema.Array(Schema.String))
// Documented as what it must be, one string (a repeated parameter is refused by the handler).
const queryParameter = (jsonSchema: Record<string, unknown>) =>
  Schema.optional(QueryValue.annotations({ jsonSchema: { type: "string", ...jsonSchema } }))
export const ListParams = Schema.Struct({
  limit: queryParameter({
    pattern: "^[1-9][0-9]{0,3}$",
    description: "Users per page: an integer from 1 to 1000 (default 500)"
  }),
  cursor: queryParameter({ description: "The previous page's next_cursor" })
})

const GroupIds = Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)))

/** `PUT /api/v1/identities/{id}` for a user. */
export const UserUpdateBody = Schema.Struct({
  /** Omitted keeps the status (docs/management-api.md, "Users"). */
  enabled: Schema.optional(Schema.Boolean),
  groups: Schema.optional(GroupIds),
  /** Only permission groups carry permissions: a non-empty value is refused (`group_permissions_required`). */
  permissions: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "UserUpdate" })

/** `PUT /api/v1/identities/{id}` for a group: its enabled flag and (permission groups) permissions. */
export const GroupIdentityBody = Schema.Struct({
  enabled: Schema.Boolean,
  permissions: Schema.optional(Permissions)
}).annotations({ identifier: "GroupIdentityUpdate" })

export const IdentityUpdateBody = Schema.Union(UserUpdateBody, GroupIdentityBody)

const GroupName = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(200, { message: () => "must be at most 200 characters" }),
  // A name is shown in pages, logs and listings: no line breaks, no terminal escapes, nothing invisible
  // or direction-changing, no whitespace at either end (src/policy/group-name.ts).
  Schema.filter((name) => groupNameProblem(name) ?? true)
)

/** `POST /api/v1/identities/groups`: a new independent permission group. */
export const GroupCreateBody = Schema.Struct({
  name: GroupName,
  provider: Schema.optional(Schema.Literal("gateway:permissions")),
  enabled: Schema.optional(Schema.Boolean),
  permissions: Schema.optional(Permissions),
  source_groups: Schema.optional(GroupIds)
}).annotations({ identifier: "GroupCreate" })

/**
 * A group's name as an update sends it: checked by the write only when it differs from the stored one
 * (src/policy/writes.ts, `nameFree`), so a group named before a rule existed can still be edited — the
 * console's form always sends the name.
 */
const GroupNameAsSent = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(200, { message: () => "must be at most 200 characters" })
)

/** `PUT /api/v1/identities/groups/{id}`: omitted fields keep their value. */
export const GroupUpdateBody = Schema.Struct({
  name: Schema.optional(GroupNameAsSent),
  enabled: Schema.optional(Schema.Boolean),
  permissions: Schema.optional(Permissions),
  source_groups: Schema.optional(GroupIds)
}).annotations({ identifier: "GroupUpdate" })

const Via = Schema.Struct({
  group_id: Schema.String,
  group_name: Schema.String,
  via: Schema.Literal("direct", "mapped"),
  source_group_id: Schema.optional(Schema.String),
  source_group_name: Schema.optional(Schema.String)
})

export const ToolAccess = Schema.Struct({
  name: Schema.String,
  /** The endpoint whose access entries decide: the tool's backend or HTTP endpoint, or its tool group. */
  backend: Schema.String,
  endpoint_kind: Schema.Literal("backend", "http_tool", "openapi_import", "tool_group"),
  /** A tool group's tool: the endpoint and original tool a call of it executes. */
  member: Schema.optional(Schema.Struct({ endpoint: Schema.String, tool: Schema.String })),
  tool: Schema.String,
  write: Schema.Boolean,
  decision: Schema.Literal("allow", "deny"),
  /** Why not, when denied. */
  reason: Schema.optional(
    Schema.Literal("not_active", "membership_stale", "scope_not_held", "no_access_entry", "write_not_allowed")
  ),
  /** The groups whose access entries allow it, and how each reaches the user. */
  decided_by: Schema.Array(Via),
  /** How those entries name the tool: `name` (listed by name), `*` (an entry granting every tool of the backend). */
  matched_by: Schema.Array(Schema.Literal("*", "name")),
  /** Argument conditions of the allowing entries; one entry's conditions must all hold. */
  conditions: Schema.Array(
    Schema.Array(Schema.Struct({ argument: Schema.String, allowed_values: Schema.Array(Schema.String) }))
  ),
  approval_required: Schema.Boolean
})

export const EffectiveAccess = Schema.Struct({
  user_id: Schema.String,
  active: Schema.Boolean,
  verified_at: Schema.NullOr(Timestamp),
  membership_stale: Schema.Boolean,
  roles: Schema.Array(Role),
  scopes: Schema.Array(Schema.String),
  groups: Schema.Array(Via),
  tools: Schema.Array(ToolAccess)
}).annotations({ identifier: "EffectiveAccess" })
export type EffectiveAccess = typeof EffectiveAccess.Type

/** One identity connection's directory version (docs/directory.md, "Resetting a provider's version"). */
export const DirectoryConnectionRecord = Schema.Struct({
  connection: Schema.Literal("oidc", "ldap"),
  provider: Schema.String.annotations({ description: "The connection's namespace, as a push answers it" }),
  version: Schema.NullOr(Schema.Number).annotations({
    description: "The last applied snapshot's version, or what a reset set; null before the first snapshot"
  }),
  revision: Schema.String.annotations({ description: 'The version as If-Match takes it ("0" when null)' }),
  applied_at: Schema.NullOr(Schema.String).annotations({ description: "When the last snapshot was applied" })
}).annotations({ identifier: "DirectoryConnection" })
export type DirectoryConnectionRecord = typeof DirectoryConnectionRecord.Type

export const DirectoryRecord = Schema.Struct({
  connections: Schema.Array(DirectoryConnectionRecord)
}).annotations({ identifier: "Directory" })

/** `POST /api/v1/directory/{connection}/reset-version`: what the version becomes (default 0: any push applies next). */
export const VersionResetBody = Schema.Struct({
  version: Schema.optionalWith(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(0), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER)),
    { default: () => 0 }
  ).annotations({ description: "The version the next push must exceed; lower than the current one" })
}).annotations({ identifier: "DirectoryVersionReset" })
