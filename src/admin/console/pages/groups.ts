import { Effect, Option } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { Backends } from "../../../mcp/upstream/backends.js"
import { noPermissions } from "../../../policy/permissions.js"
import { PolicyWrites } from "../../../policy/writes.js"
import { GroupRepo } from "../../../store/groups.js"
import { MembershipRepo } from "../../../store/memberships.js"
import { hasControlCharacter } from "../../../text.js"
import { groupRecordOf } from "../../identity-reads.js"
import { groupRecord } from "../../records.js"
import { GroupCreateBody, type GroupRecord, GroupUpdateBody } from "../../schemas.js"
import { ConsoleProblem, type ConsoleRequest, type ConsoleRoute } from "../route.js"
import { checked, checkedForm, decodeFields, formRevision, lines, notFound, recordId, refusalProblem } from "./forms.js"
import { permissionFields, permissionsOf } from "./permissions-form.js"

/**
 * The console's groups (docs/console.md, "Identities and access"): permission groups with their
 * grants and the organization groups mapped onto them, organization groups and departments. Every
 * write is PolicyWrites' (`POST /api/v1/identities/groups`, `PUT /api/v1/identities/groups/{id}`):
 * only the built-in administrator may change a mapping, and the page shows that refusal.
 */

/** Groups per page of the list. */
export const GROUPS_PAGE = 50

const groupPath = (id: string) => `/console/groups/${encodeURIComponent(id)}`

const KIND_TEXT: Record<GroupRecord["kind"], string> = {
  permission: "permission group",
  group: "organization group",
  department: "department"
}

const actorOf = (request: ConsoleRequest) => ({ userId: request.admin.userId, kind: request.admin.kind })

const cursorOf = (request: ConsoleRequest) =>
  Effect.gen(function* () {
    const values = request.query.getAll("cursor")
    const cursor = values[0] ?? ""
    if (values.length > 1 || cursor.length > 128 || hasControlCharacter(cursor)) {
      return yield* new ConsoleProblem({ status: 400, message: "cursor: give the one the previous page linked" })
    }
    return cursor
  })

const groupList: ConsoleRoute = {
  method: "GET",
  path: "/console/groups",
  handler: (request) =>
    Effect.gen(function* () {
      const cursor = yield* cursorOf(request)
      const slice = yield* (yield* GroupRepo).slice(cursor, GROUPS_PAGE + 1)
      const shown = slice.slice(0, GROUPS_PAGE)
      const counts = yield* (yield* MembershipRepo).countsOf(shown.map((group) => group.id))
      const records = shown.map((group) => groupRecord(group, counts.get(group.id) ?? 0))
      const next = slice.length > GROUPS_PAGE ? shown.at(-1)!.id : undefined
      return {
        _tag: "Page" as const,
        title: "Groups",
        body: html`<section aria-labelledby="create-heading">
<h2 id="create-heading">Create a permission group</h2>
<form method="post" action="/console/groups">
${request.csrfField}
<label for="new-group-name">Name</label>
<input type="text" id="new-group-name" name="name" maxlength="200" required>
<label><input type="checkbox" name="enabled" value="on" checked> Enabled</label>
<button type="submit">Create permission group</button>
</form>
</section>
<section aria-labelledby="list-heading">
<h2 id="list-heading">All groups</h2>
${
  records.length === 0
    ? html`<p>No groups here.</p>`
    : html`<table>
<caption>Groups${cursor === "" ? "" : " (continued)"}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Enabled</th><th scope="col">Members</th><th scope="col">Mapped from</th></tr></thead>
<tbody>${records.map(
        (group) => html`<tr><th scope="row"><a href="${groupPath(group.id)}">${group.name}</a>${
          group.builtin === null ? "" : html` <span class="muted">(built-in)</span>`
        }</th>
<td>${KIND_TEXT[group.kind]}${group.kind === "permission" ? "" : ` of ${group.provider}`}</td>
<td>${group.enabled ? "yes" : "no"}</td>
<td>${group.members}</td>
<td>${group.source_groups.length === 0 ? "" : `${group.source_groups.length} organization group(s)`}</td></tr>`
      )}</tbody>
</table>`
}
${next === undefined ? "" : html`<p><a href="/console/groups?cursor=${encodeURIComponent(next)}">More groups</a></p>`}
</section>`
      }
    })
}

const groupCreate: ConsoleRoute = {
  method: "POST",
  path: "/console/groups",
  handler: (request) =>
    Effect.gen(function* () {
      const form = yield* checkedForm(request)
      const create = yield* decodeFields(GroupCreateBody, {
        name: form.get("name") ?? "",
        enabled: checked(form, "enabled")
      })
      const id = yield* (yield* PolicyWrites)
        .createGroup(actorOf(request), {
          name: create.name,
          enabled: create.enabled ?? true,
          permissions: noPermissions,
          sourceGroups: []
        })
        .pipe(Effect.catchTag("PolicyRefused", refusalProblem))
      return {
        _tag: "SeeOther" as const,
        location: groupPath(id),
        notice: `Created ${create.name}; give it permissions below.`
      }
    })
}

/** Whether the page edits only `enabled`: an organization group, or a built-in permission group. */
const enabledOnly = (group: GroupRecord) => group.kind !== "permission" || group.builtin !== null

const editForm = (
  request: ConsoleRequest,
  group: GroupRecord,
  sourceNames: ReadonlyMap<string, string>,
  endpoints: ReadonlyArray<string>
): Html => {
  const builtinAdmin = request.admin.kind === "builtin_admin"
  return html`<section aria-labelledby="edit-heading">
<h2 id="edit-heading">Change ${group.name}</h2>
<form method="post" action="${groupPath(group.id)}">
${request.csrfField}
<input type="hidden" name="revision" value="${group.revision}">
${
  enabledOnly(group)
    ? html`<p class="muted">${group.kind === "permission" ? "A built-in group: only whether it is enabled can change." : "An organization group: its name and members come from the identity provider; only whether it is enabled can change here."}</p>`
    : html`<label for="group-name">Name</label>
<input type="text" id="group-name" name="name" value="${group.name}" maxlength="200" required>`
}
<label><input type="checkbox" name="enabled" value="on"${group.enabled ? html` checked` : ""}> Enabled</label>
${
  enabledOnly(group)
    ? ""
    : html`${permissionFields(group.permissions ?? noPermissions, endpoints)}
<fieldset><legend>Organization groups mapped onto this group</legend>
<p class="muted">${builtinAdmin ? "Their members receive this group's permissions." : "Only the built-in administrator may change these mappings; a change made here is refused."}</p>
${group.source_groups.length === 0 ? "" : html`<ul>${group.source_groups.map((id) => html`<li>${sourceNames.get(id) ?? "(removed)"} <code>${id}</code></li>`)}</ul>`}
<label for="source-groups">Organization group ids, one per line</label>
<textarea id="source-groups" name="source_groups" rows="3" cols="40">${group.source_groups.join("\n")}</textarea>
</fieldset>`
}
<button type="submit">Save ${group.name}</button>
</form>
</section>`
}

const groupPage: ConsoleRoute = {
  method: "GET",
  path: "/console/groups/:id",
  handler: (request) =>
    Effect.gen(function* () {
      const id = yield* recordId(request, "group")
      const found = yield* groupRecordOf(id)
      if (Option.isNone(found)) return yield* notFound("group", id)
      const group = found.value
      const sourceNames = yield* (yield* GroupRepo).namesOf(group.source_groups)
      const endpoints = (yield* Backends).index().endpoints.map((endpoint) => endpoint.id)
      return {
        _tag: "Page" as const,
        title: group.name,
        body: html`<dl>
<dt>Kind</dt><dd>${KIND_TEXT[group.kind]}${group.builtin === null ? "" : " (built-in)"}</dd>
<dt>Provider</dt><dd>${group.provider}${group.external_id === null ? "" : html`, id there <code>${group.external_id}</code>`}</dd>
<dt>Members</dt><dd>${group.members}</dd>
<dt>Id</dt><dd><code>${group.id}</code></dd>
</dl>
${editForm(request, group, sourceNames, endpoints)}`
      }
    })
}

const groupUpdate: ConsoleRoute = {
  method: "POST",
  path: "/console/groups/:id",
  handler: (request) =>
    Effect.gen(function* () {
      const id = yield* recordId(request, "group")
      const form = yield* checkedForm(request)
      const found = yield* groupRecordOf(id)
      if (Option.isNone(found)) return yield* notFound("group", id)
      const revision = yield* formRevision(form)
      const group = found.value
      const enabled = checked(form, "enabled")
      const body = enabledOnly(group)
        ? { enabled }
        : {
            name: form.get("name") ?? "",
            enabled,
            permissions: yield* permissionsOf(form),
            ...(form.has("source_groups") ? { source_groups: lines(form.get("source_groups")) } : {})
          }
      const update = yield* decodeFields(GroupUpdateBody, body)
      yield* (yield* PolicyWrites)
        .updateGroup(actorOf(request), id, revision, {
          ...(update.name === undefined ? {} : { name: update.name }),
          ...(update.enabled === undefined ? {} : { enabled: update.enabled }),
          ...(update.permissions === undefined ? {} : { permissions: update.permissions }),
          ...(update.source_groups === undefined ? {} : { sourceGroups: update.source_groups })
        })
        .pipe(Effect.catchTag("PolicyRefused", refusalProblem))
      return { _tag: "SeeOther" as const, location: groupPath(id), notice: `Saved ${update.name ?? group.name}.` }
    })
}

export const groupRoutes: ReadonlyArray<ConsoleRoute> = [groupList, groupCreate, groupPage, groupUpdate]
