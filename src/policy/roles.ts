import type { GatewayConfig } from "../config/schema.js"
import type { Role } from "./permissions.js"

/** The approver role's scope: reviewing write approvals (docs/access-policy.md, "Roles"). */
export const APPROVER_SCOPE = "gateway:approve"
/** The security reviewer's scope when `admin.approvals.policy_changes.required_scopes` names none. */
export const SECURITY_SCOPE = "gateway:security"

/**
 * The administrative scopes each role holds (docs/access-policy.md, "Roles": roles map to
 * administrative scopes). Built once from the static `admin` settings:
 *
 * - `admin` → `admin.required_scopes` (default `gateway:admin`): the Management API and console;
 * - `approver` → `gateway:approve`: reviewing write approvals (no-self-approval still applies);
 * - `security_reviewer` → `admin.approvals.policy_changes.required_scopes`, else `gateway:security`.
 */
export type RoleScopes = ReadonlyMap<Role, ReadonlyArray<string>>

export const roleScopesOf = (config: GatewayConfig): RoleScopes => {
  const security = config.admin.approvals.policy_changes.required_scopes
  return new Map<Role, ReadonlyArray<string>>([
    ["admin", config.admin.required_scopes],
    ["approver", [APPROVER_SCOPE]],
    ["security_reviewer", security.length > 0 ? security : [SECURITY_SCOPE]]
  ])
}

/** Every scope some role can hold: the authorization server publishes and grants them. */
export const roleScopeNames = (roles: RoleScopes): ReadonlyArray<string> => [...new Set([...roles.values()].flat())]
