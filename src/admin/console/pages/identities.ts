import { Effect, Option } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { PolicyWrites } from "../../../policy/writes.js"
import { MembershipRepo } from "../../../store/memberships.js"
import { UserRepo, type UserRow } from "../../../store/users.js"
import { hasControlCharacter } from "../../../text.js"
import { effectiveAccessOf, userRecordOf } from "../../identity-reads.js"
import { type UserRecord, UserUpdateBody } from "../../schemas.js"
import { ConsoleProblem, type ConsoleRequest, type ConsoleRoute } from "../route.js"
import { effectiveAccessSection } from "./effective-access.js"
import { checked, checkedForm, decodeFields, formRevision, notFound, recordId, refusalProblem } from "./forms.js"

/**
 * The console's people (docs/console.md, "Identities and access"): a paged list with a bounded name
 * filter, and each person's page — their groups, effective access, and the form that enables or
 * disables them and changes their direct groups (PolicyWrites.updateUser, as `PUT /api/v1/identities/{id}`).
 */

/** People per page. */
export const PEOPLE_PAGE = 100
/** Users one filtered page looks through at most; "More" continues after them. */
export const FILTER_WINDOW = 2000

const STATUS_TEXT: Record<UserRecord["status"], string> = {
  pending: "pending (waits for an administrator)",
  enabled: "enabled",
  disabled: "disabled"
}

const KIND_TEXT: Record<UserRecord["kind"], string> = {
  builtin_admin: "built-in administrator",
  local: "local account",
  enterprise: "enterprise identity"
}

const personPath = (id: string) => `/console/identities/${encodeURIComponent(id)}`

/** A query parameter given at most once and no longer than `max`, without control characters. */
const queryValue = (request: ConsoleRequest, name: string, max: number) =>
  Effect.gen(function* () {
    const values = request.query.getAll(name)
    if (values.length > 1) return yield* new ConsoleProblem({ status: 400, message: `${name}: give it once` })
    const value = values[0] ?? ""
    if (value.length > max || hasControlCharacter(value)) {
      return yield* new ConsoleProblem({
        status: 400,
        message: `${name}: at most ${max} characters, without control characters`
      })
    }
    return value
  })

/**
 * A page of people with how many groups each is in: a person of the directory may be in hundreds, so
 * the list counts them (one statement for the page) and the person's own page names them.
 */
const peopleTable = (
  people: ReadonlyArray<UserRow>,
  groups: ReadonlyMap<string, number>,
  caption: string,
  filtered: boolean
): Html =>
  people.length === 0
    ? html`<p>${filtered ? "No people match here." : "No people here."}</p>`
    : html`<table>
<caption>${caption}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Groups</th></tr></thead>
<tbody>${people.map(
        (person) => html`<tr>
<th scope="row"><a href="${personPath(person.id)}">${person.display_name}</a>${
          person.username === null ? "" : html` <span class="muted">(${person.username})</span>`
        }</th>
<td>${KIND_TEXT[person.kind]}</td>
<td>${STATUS_TEXT[person.status]}${person.directory_active ? "" : ", inactive in the directory"}</td>
<td>${groups.get(person.id) ?? 0}</td>
</tr>`
      )}</tbody>
</table>`

const peopleList: ConsoleRoute = {
  method: "GET",
  path: "/console/identities",
  handler: (request) =>
    Effect.gen(function* () {
      const filter = (yield* queryValue(request, "q", 200)).trim()
      const cursor = yield* queryValue(request, "cursor", 128)
      const users = yield* UserRepo
      let rows: ReadonlyArray<UserRow>
      let next: string | undefined
      if (filter === "") {
        const page = yield* users.page(cursor, PEOPLE_PAGE + 1)
        rows = page.slice(0, PEOPLE_PAGE)
        next = page.length > PEOPLE_PAGE ? rows.at(-1)!.id : undefined
      } else {
        const found = yield* users.searchWindow(cursor, filter, FILTER_WINDOW, PEOPLE_PAGE)
        rows = found.users
        next = found.next
      }
      const groups = yield* (yield* MembershipRepo).countsForUsers(rows.map((row) => row.id))
      const more = new URLSearchParams({
        ...(filter === "" ? {} : { q: filter }),
        ...(next === undefined ? {} : { cursor: next })
      })
      const caption =
        filter === ""
          ? `People${cursor === "" ? "" : " (continued)"}`
          : `People whose name or username contains “${filter}”${next === undefined ? "" : ` (among the next ${FILTER_WINDOW} looked through)`}`
      return {
        _tag: "Page" as const,
        title: "People",
        body: html`<form method="get" action="/console/identities" role="search">
<label for="people-filter">Name or username contains</label>
<input type="text" id="people-filter" name="q" value="${filter}" maxlength="200">
<button type="submit">Filter people</button>
</form>
${peopleTable(rows, groups, caption, filter !== "")}
${next === undefined ? "" : html`<p><a href="/console/identities?${more.toString()}">More people</a></p>`}
<p><a href="/console/groups">Permission groups and organization groups</a></p>`
      }
    })
}

/** The form of a person: enabled, and their direct groups (the upstream-owned ones are kept as they are). */
/**
 * A local account waiting for enrolment has no "Enabled" box: only its link enables it, and an unticked
 * box would disable it (docs/local-accounts.md); the form then keeps its status and changes its groups.
 */
const waitsForEnrolment = (person: UserRecord) => person.kind === "local" && person.status === "pending"

const personForm = (request: ConsoleRequest, person: UserRecord): Html => {
  const direct = person.groups.filter((group) => group.source === "direct")
  return html`<section aria-labelledby="change-heading">
<h2 id="change-heading">Change access</h2>
<form method="post" action="${personPath(person.id)}">
${request.csrfField}
<input type="hidden" name="revision" value="${person.revision}">
${
  waitsForEnrolment(person)
    ? html`<p>Waiting for enrolment: its enrolment link enables it. Disable it or give it a new link under <a href="/console/local-accounts">Local accounts</a>.</p>`
    : html`<label><input type="checkbox" name="enabled" value="on"${person.enabled ? html` checked` : ""}> Enabled (may sign in and use tools)</label>`
}
<fieldset><legend>Direct groups (uncheck to remove)</legend>
${direct.length === 0 ? html`<p class="muted">None.</p>` : ""}${direct.map(
  (group) => html`<label><input type="checkbox" name="group" value="${group.id}" checked> ${group.name}</label>`
)}
<label for="add-group">Add to the permission group with id</label>
<input type="text" id="add-group" name="add_group" maxlength="128">
</fieldset>
<button type="submit">Save access of ${person.display_name}</button>
</form>
</section>`
}

const personPage: ConsoleRoute = {
  method: "GET",
  path: "/console/identities/:id",
  handler: (request) =>
    Effect.gen(function* () {
      const id = yield* recordId(request, "person")
      const found = yield* userRecordOf(id)
      if (Option.isNone(found)) {
        // A group's id: its page is elsewhere.
        return yield* notFound("person", id)
      }
      const person = found.value
      const access = yield* effectiveAccessOf(id)
      return {
        _tag: "Page" as const,
        title: person.display_name,
        body: html`<dl>
<dt>Kind</dt><dd>${KIND_TEXT[person.kind]}${person.username === null ? "" : ` (username ${person.username})`}</dd>
<dt>Status</dt><dd>${STATUS_TEXT[person.status]}${person.directory_active ? "" : ", inactive in the directory"}</dd>
${person.namespace === null ? "" : html`<dt>Identity provider</dt><dd>${person.namespace}, subject <code>${person.external_subject ?? ""}</code></dd>`}
<dt>Id</dt><dd><code>${person.id}</code></dd>
</dl>
<section aria-labelledby="groups-heading">
<h2 id="groups-heading">Groups</h2>
${
  person.groups.length === 0
    ? html`<p>Member of no group.</p>`
    : html`<table>
<caption>Groups of ${person.display_name}</caption>
<thead><tr><th scope="col">Group</th><th scope="col">Membership from</th></tr></thead>
<tbody>${person.groups.map(
        (
          group
        ) => html`<tr><th scope="row"><a href="/console/groups/${encodeURIComponent(group.id)}">${group.name}</a></th>
<td>${group.source === "direct" ? "an administrator (direct)" : group.source === "claims" ? "sign-in claims" : "directory snapshot"}</td></tr>`
      )}</tbody>
</table>`
}
</section>
${personForm(request, person)}
${access._tag === "Explained" ? effectiveAccessSection(access.access) : ""}`
      }
    })
}

const personUpdate: ConsoleRoute = {
  method: "POST",
  path: "/console/identities/:id",
  handler: (request) =>
    Effect.gen(function* () {
      const id = yield* recordId(request, "person")
      const form = yield* checkedForm(request)
      const found = yield* userRecordOf(id)
      if (Option.isNone(found)) return yield* notFound("person", id)
      const revision = yield* formRevision(form)
      // The form lists direct groups only; upstream-owned ones are the provider's and always kept.
      const upstream = found.value.groups.filter((group) => group.source !== "direct").map((group) => group.id)
      const added = (form.get("add_group") ?? "").trim()
      const update = yield* decodeFields(UserUpdateBody, {
        ...(waitsForEnrolment(found.value) ? {} : { enabled: checked(form, "enabled") }),
        groups: [...upstream, ...form.getAll("group"), ...(added === "" ? [] : [added])]
      })
      yield* (yield* PolicyWrites)
        .updateUser({ userId: request.admin.userId, kind: request.admin.kind }, id, revision, {
          ...(update.enabled === undefined ? {} : { enabled: update.enabled }),
          ...(update.groups === undefined ? {} : { groups: update.groups })
        })
        .pipe(Effect.catchTag("PolicyRefused", refusalProblem))
      return { _tag: "SeeOther" as const, location: personPath(id), notice: `Saved ${found.value.display_name}.` }
    })
}

export const identityRoutes: ReadonlyArray<ConsoleRoute> = [peopleList, personPage, personUpdate]
