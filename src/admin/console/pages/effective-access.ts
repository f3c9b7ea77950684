import { type Html, html } from "../../../auth/pages/html.js"
import type { EffectiveAccess } from "../../schemas.js"

/**
 * A person's effective access (docs/access-policy.md, "Effective access") as the console shows it: the
 * same explanation the Management API answers, one table row per published tool, allow or deny and why.
 */

type ToolAccess = EffectiveAccess["tools"][number]
type Via = EffectiveAccess["groups"][number]

const REASONS: Record<NonNullable<ToolAccess["reason"]>, string> = {
  not_active: "The person is not active (disabled, pending, or inactive in the directory).",
  membership_stale:
    "Their organization memberships were last confirmed too long ago; they must sign in again or the directory must sync.",
  scope_not_held: "They hold none of the scopes the endpoint requires.",
  no_access_entry: "No group of theirs has an access entry naming this tool.",
  write_not_allowed: "Their access entries name this write tool without allowing write requests."
}

const ENDPOINT_KINDS: Record<ToolAccess["endpoint_kind"], string> = {
  backend: "backend",
  http_tool: "HTTP endpoint",
  openapi_import: "OpenAPI import",
  tool_group: "tool group"
}

/** How a group reaches the person: directly, or through an organization group mapped onto it. */
export const viaText = (via: Via): string =>
  via.via === "direct"
    ? `${via.group_name} (direct member)`
    : `${via.group_name} (mapped from ${via.source_group_name ?? via.source_group_id ?? "an organization group"})`

const why = (tool: ToolAccess): Html => {
  if (tool.decision === "deny") return html`${REASONS[tool.reason ?? "no_access_entry"]}`
  const naming = tool.matched_by.includes("*") ? "every tool of the endpoint" : "the tool by name"
  const conditions = tool.conditions.map((rules) =>
    rules.map((rule) => `${rule.argument} ∈ {${rule.allowed_values.join(", ")}}`).join(" and ")
  )
  return html`Allowed by ${tool.decided_by.map(viaText).join("; ")}, naming ${naming}.${
    conditions.length === 0 ? "" : html` Only when ${conditions.join(", or ")}.`
  }${tool.approval_required ? " Each call needs an approval." : ""}`
}

export const effectiveAccessSection = (access: EffectiveAccess): Html => {
  const allowed = access.tools.filter((tool) => tool.decision === "allow").length
  const rows = access.tools.map(
    (tool) => html`<tr>
<th scope="row"><code>${tool.name}</code></th>
<td>${tool.backend} <span class="muted">(${ENDPOINT_KINDS[tool.endpoint_kind]})</span>${
      tool.member === undefined
        ? ""
        : html`<br><span class="muted">runs ${tool.member.endpoint} / ${tool.member.tool}</span>`
    }</td>
<td>${tool.write ? "write" : "read"}</td>
<td><strong>${tool.decision === "allow" ? "Allowed" : "Denied"}</strong></td>
<td>${why(tool)}</td>
</tr>`
  )
  return html`<section aria-labelledby="access-heading">
<h2 id="access-heading">Effective access</h2>
<p>${access.active ? "Active." : "Not active: every tool is denied."} ${
    access.verified_at === null ? "" : `Organization memberships last confirmed ${access.verified_at}.`
  }${access.membership_stale ? " These memberships are stale." : ""}</p>
<p>Roles: ${access.roles.length === 0 ? "none" : access.roles.join(", ")}. Scopes: ${
    access.scopes.length === 0 ? "none" : access.scopes.join(" ")
  }.</p>
${
  access.tools.length === 0
    ? html`<p>No tool is published now.</p>`
    : html`<table>
<caption>${allowed} of ${access.tools.length} published tools allowed</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">Endpoint</th><th scope="col">Read or write</th><th scope="col">Decision</th><th scope="col">Why</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
}
</section>`
}
