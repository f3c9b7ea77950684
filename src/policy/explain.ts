import type { EffectiveAccess } from "../admin/schemas.js"
import type { Grant, GroupSource } from "./grant.js"
import type { ListedTool, PolicyEndpoint } from "./tool.js"
import { EVERY_TOOL } from "./tool-names.js"
import { isOpen } from "./view.js"

const viaOf = (source: GroupSource) => ({
  group_id: source.group.id,
  group_name: source.group.name,
  via: source.via._tag,
  ...(source.via._tag === "mapped"
    ? { source_group_id: source.via.sourceGroupId, source_group_name: source.via.sourceGroupName }
    : {})
})

type Reason = NonNullable<EffectiveAccess["tools"][number]["reason"]>

/**
 * Explainable access (docs/access-policy.md, "Effective access"): for every published tool — of a
 * backend, an HTTP endpoint or a tool group (`endpoints`: the generation's, `endpointsOf`) — whether
 * `grant`'s user may call it with a token holding every scope they hold, which groups decide it and
 * how each reaches them (direct membership, or an organization group mapped onto it), whether an
 * entry names the tool or grants it through `"*"`, and whether
 * their upstream memberships are stale. A tool group's tool is decided by the group's grant, and names
 * the member it executes. The same rules as the PolicyEngine's views and decisions.
 */
export const explainAccess = (
  grant: Grant,
  endpoints: ReadonlyArray<PolicyEndpoint>,
  listed: ReadonlyArray<ListedTool>,
  now: number
): EffectiveAccess => {
  const stale = grant.staleAt !== undefined && now >= grant.staleAt
  const verified = grant.user.membership_verified_at
  const tools = listed
    .flatMap((tool) => (tool.gateway === undefined && endpoints[tool.endpoint] !== undefined ? [tool] : []))
    .map((tool) => {
      const deciding = endpoints[tool.endpoint]!
      const endpoint = grant.endpoint(deciding.id)
      const entries = endpoint?.entries(tool.original) ?? []
      const allowing = tool.write ? entries.filter((granted) => granted.entry.allow_write_requests) : entries
      const reason: Reason | undefined = !grant.active
        ? "not_active"
        : stale
          ? "membership_stale"
          : !isOpen(deciding, grant.scopes)
            ? "scope_not_held"
            : entries.length === 0
              ? "no_access_entry"
              : allowing.length === 0
                ? "write_not_allowed"
                : undefined
      return {
        name: tool.key,
        backend: deciding.id,
        endpoint_kind: deciding.kind,
        ...(tool.member === undefined ? {} : { member: tool.member }),
        tool: tool.original,
        write: tool.write,
        decision: reason === undefined ? ("allow" as const) : ("deny" as const),
        ...(reason === undefined ? {} : { reason }),
        decided_by: [...new Map(allowing.map((granted) => [granted.source.group.id, viaOf(granted.source)])).values()],
        // How the allowing entries name the tool: by its name, or by `"*"` (every tool of the backend).
        matched_by: [
          ...new Set(
            allowing.map((granted) => (granted.entry.tools.includes(EVERY_TOOL) ? EVERY_TOOL : ("name" as const)))
          )
        ].sort(),
        conditions: allowing
          .filter((granted) => granted.rules.length > 0)
          .map((granted) =>
            granted.entry.resource_rules.map((rule) => ({
              argument: rule.argument,
              allowed_values: rule.allowed_values
            }))
          ),
        approval_required: tool.write && tool.approval !== undefined
      }
    })
  return {
    user_id: grant.user.id,
    active: grant.active,
    verified_at: verified === null ? null : verified.toISOString(),
    membership_stale: stale,
    roles: [...grant.roles],
    scopes: [...grant.scopes].sort(),
    groups: grant.sources.map(viaOf),
    tools
  }
}
