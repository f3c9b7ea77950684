import type { GroupRow } from "../store/groups.js"
import type { MembershipRow } from "../store/memberships.js"
import type { UserRow } from "../store/users.js"
import type { GroupRecord, UserRecord } from "./schemas.js"

/** A stored user as the Management API shows it; `groups` names each membership and who owns it. */
export const userRecord = (
  user: UserRow,
  memberships: ReadonlyArray<MembershipRow>,
  groups: ReadonlyMap<string, { readonly name: string }>
): UserRecord => ({
  id: user.id,
  type: "user",
  kind: user.kind,
  username: user.username,
  display_name: user.display_name,
  status: user.status,
  enabled: user.status === "enabled",
  directory_active: user.directory_active,
  groups: memberships.map((row) => ({
    id: row.group_id,
    name: groups.get(row.group_id)?.name ?? "",
    source: row.source
  })),
  membership_verified_at: user.membership_verified_at?.toISOString() ?? null,
  namespace: user.namespace,
  external_subject: user.external_subject,
  revision: String(user.revision),
  created_at: user.created_at.toISOString(),
  updated_at: user.updated_at.toISOString()
})

export const groupRecord = (group: GroupRow, members: number): GroupRecord => ({
  id: group.id,
  type: "group",
  name: group.name,
  provider: group.provider,
  kind: group.kind,
  external_id: group.external_id,
  managed_locally: group.managed_locally,
  builtin: group.builtin,
  enabled: group.enabled,
  source_groups: group.source_groups,
  permissions: group.permissions,
  members,
  revision: String(group.revision),
  created_at: group.created_at.toISOString(),
  updated_at: group.updated_at.toISOString()
})
