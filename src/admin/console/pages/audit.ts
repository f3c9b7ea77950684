import { Effect } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { type AuditQuery, listAuditEvents } from "../../audit-events.js"
import type { ConsoleAnswer, ConsoleRoute, ConsoleSection } from "../route.js"
import { jsonBlock, problem, shown, when } from "./parts.js"

/**
 * The audit trail (docs/console.md, "Tool sources, approvals and audit"): identity and configuration
 * changes, newest first, filtered by actor and target, a page at a time — `listAuditEvents`, which
 * `GET /api/v1/audit-events` calls too.
 */

const page = (title: string, body: Html): ConsoleAnswer => ({ _tag: "Page", title, body })

const parameterOf = (query: URLSearchParams, name: string) => {
  const all = query.getAll(name)
  return all.length === 0 ? undefined : all.length === 1 ? all[0] : all
}

const link = (filters: Record<string, string | undefined>) => {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(filters)) if (value !== undefined && value !== "") query.set(name, value)
  const text = query.toString()
  return text === "" ? "/console/audit" : `/console/audit?${text}`
}

const listRoute: ConsoleRoute = {
  method: "GET",
  path: "/console/audit",
  handler: (request) =>
    Effect.gen(function* () {
      const query: AuditQuery = {
        actor: parameterOf(request.query, "actor"),
        target: parameterOf(request.query, "target"),
        limit: parameterOf(request.query, "limit"),
        cursor: parameterOf(request.query, "cursor")
      }
      const result = yield* listAuditEvents(query).pipe(
        Effect.catchTag("AuditQueryInvalid", (invalid) => problem(400, invalid.message))
      )
      const actor = typeof query.actor === "string" ? query.actor : ""
      const target = typeof query.target === "string" ? query.target : ""
      const limit = typeof query.limit === "string" ? query.limit : undefined
      return page(
        "Audit trail",
        html`<p class="muted">Changes of identities, groups, identity connections and tool sources, newest first.</p>
<form method="get" action="/console/audit">
<label for="actor">Actor (user id)</label><input type="text" id="actor" name="actor" value="${actor}">
<label for="target">Target (id)</label><input type="text" id="target" name="target" value="${target}">
<button type="submit">Filter</button> <a href="/console/audit">Clear</a></form>
${
  result.items.length === 0
    ? html`<p id="no-events">No audit event${actor !== "" || target !== "" ? " matches" : " yet"}.</p>`
    : html`<table id="events"><caption>Audit events</caption>
<thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Detail</th></tr></thead>
<tbody>${result.items.map(
        (event) => html`<tr><th scope="row">${when(event.at)}</th>
<td>${event.actor === null ? "the gateway" : html`<a href="${link({ actor: event.actor.id, limit })}">${shown(event.actor.name ?? event.actor.id)}</a>`}</td>
<td><code>${shown(event.action)}</code></td>
<td>${shown(event.target.kind)} <a href="${link({ target: event.target.id, limit })}"><code>${shown(event.target.id)}</code></a></td>
<td>${jsonBlock(event.detail)}</td></tr>`
      )}</tbody></table>`
}
${result.next_cursor === undefined ? "" : html`<p><a id="older" href="${link({ actor, target, limit, cursor: result.next_cursor })}">Older events</a></p>`}`
      )
    })
}

export const auditSection: ConsoleSection = {
  nav: [{ label: "Audit trail", path: "/console/audit" }],
  routes: [listRoute]
}
