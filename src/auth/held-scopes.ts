import type { GatewayConfig } from "../config/schema.js"
import type { UserRow } from "../store/users.js"
import { OFFLINE_ACCESS } from "./scopes.js"

/**
 * The scopes a user holds: the only ones a token for them may carry, whatever the client asks for.
 * Spec Authorization model 1: users hold no direct scopes; they inherit them from permission groups.
 * Until groups exist (the PolicyEngine replaces this function), deny by default:
 *
 * - the built-in local administrator holds the console's administrative scopes
 *   (`admin.required_scopes`, default `gateway:admin`) — but never a scope a backend requires (its
 *   Administrators membership "grants no business tools") nor the configuration reviewers' security
 *   scope (a reviewer must be another subject than the administrator who proposes);
 * - every other user holds nothing.
 */
export const scopesHeldBy = (config: GatewayConfig, user: Pick<UserRow, "kind">): ReadonlySet<string> => {
  if (user.kind !== "builtin_admin") return new Set()
  const excluded = new Set([
    ...config.backends.flatMap((backend) => backend.required_scopes),
    ...config.admin.approvals.policy_changes.required_scopes
  ])
  return new Set(config.admin.required_scopes.filter((scope) => !excluded.has(scope)))
}

/**
 * `requested` narrowed to what `user` holds, in request order. `offline_access` stays: it asks for a
 * refresh token inside the 8-hour session and grants no access of its own.
 */
export const grantableScope = (
  config: GatewayConfig,
  user: Pick<UserRow, "kind">,
  requested: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const held = scopesHeldBy(config, user)
  return requested.filter((scope) => scope === OFFLINE_ACCESS || held.has(scope))
}
