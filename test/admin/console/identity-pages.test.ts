/**
 * The console's identity pages (docs/console.md, "Identities and access"): people (paged, filtered by
 * name within a bounded window), a person's groups and changes to them, permission groups with their
 * grants and mappings. Each route runs in a real in-process gateway's generation, on SQLite and on
 * PostgreSQL; the effects are the Management API's (the record, its revision, the audit event).
 */

import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, Schema } from "effect"
import { consoleSections } from "../../../src/admin/console/pages/index.js"
import {
  type ConsoleAnswer,
  ConsoleProblem,
  type ConsoleRequest,
  type ConsoleRoute
} from "../../../src/admin/console/route.js"
import { html } from "../../../src/auth/pages/html.js"
import { Permissions } from "../../../src/policy/permissions.js"
import { PolicyWrites } from "../../../src/policy/writes.js"
import { AuditEventRepo } from "../../../src/store/audit-events.js"
import { GroupRepo } from "../../../src/store/groups.js"
import { LocalCredentialRepo } from "../../../src/store/local-credentials.js"
import { MembershipRepo } from "../../../src/store/memberships.js"
import { UserRepo } from "../../../src/store/users.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { storeKinds } from "../../support/databases.js"
import { testActor } from "../../support/grants.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"

const routes = consoleSections.flatMap((section) => section.routes)
const route = (method: "GET" | "POST", path: string): ConsoleRoute => {
  const found = routes.find((candidate) => candidate.method === method && candidate.path === path)
  if (found === undefined) throw new Error(`no console route ${method} ${path}`)
  return found
}

/** The page's HTML, failing the test if the route answered anything else. */
const pageOf = (answer: ConsoleAnswer | ConsoleProblem): string => {
  if (answer instanceof ConsoleProblem) throw new Error(`expected a page, got ${answer.status}: ${answer.message}`)
  if (answer._tag !== "Page") throw new Error(`expected a page, got a redirect to ${answer.location}`)
  // The layout renders the title as the page's <h1> (src/admin/console/layout.ts), escaped like the body.
  return html`<h1>${answer.title}</h1>${answer.body}`.text
}

const problemOf = (answer: ConsoleAnswer | ConsoleProblem) => {
  if (!(answer instanceof ConsoleProblem)) throw new Error(`expected a problem, got ${answer._tag}`)
  return { status: answer.status, message: answer.message }
}

const form = (fields: Record<string, string | ReadonlyArray<string>>) => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) {
    for (const one of typeof value === "string" ? [value] : value) params.append(name, one)
  }
  return params
}

const HOSTILE = `<script>alert("x")</script>`

const addUser = (gateway: OAuthGateway, username: string, displayName: string) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const at = new Date(yield* Clock.currentTimeMillis)
      return yield* (yield* UserRepo).insertLocal({ kind: "local", username, displayName, at })
    })
  )

const addPermissionGroup = (gateway: OAuthGateway, name: string, permissions: unknown = {}) =>
  inGateway(gateway)(
    Effect.flatMap(PolicyWrites, (writes) =>
      writes.createGroup(testActor, {
        name,
        enabled: true,
        permissions: Schema.decodeUnknownSync(Permissions)(permissions),
        sourceGroups: []
      })
    )
  )

const userOf = (gateway: OAuthGateway, id: string) =>
  inGateway(gateway)(
    Effect.map(
      Effect.flatMap(UserRepo, (users) => users.findById(id)),
      Option.getOrThrow
    )
  )

const groupOf = (gateway: OAuthGateway, id: string) =>
  inGateway(gateway)(Effect.flatMap(GroupRepo, (groups) => groups.find(id)))

const auditOf = (gateway: OAuthGateway, id: string) =>
  inGateway(gateway)(Effect.flatMap(AuditEventRepo, (audit) => audit.forTarget(id)))

describe.each(storeKinds)("console: people (%s)", (kind) => {
  it.scoped("lists people a page at a time and filters by name within a bounded window, escaping every name", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const admin = yield* builtinAdmin(gateway)
      const list = route("GET", "/console/identities")
      // An empty store (the built-in administrator alone) renders.
      const empty = pageOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin)))
      expect(empty).toContain("<h1>People</h1>")
      expect(empty).toContain('<label for="people-filter">')
      expect(empty).not.toContain("More people")

      yield* addUser(gateway, "mallory", HOSTILE)
      for (let index = 0; index < 105; index++) {
        yield* addUser(gateway, `person-${String(index).padStart(3, "0")}`, `Person ${index}`)
      }
      const first = pageOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin)))
      expect(first.match(/<tr>\n<th scope="row">/g)).toHaveLength(100)
      const more = /href="\/console\/identities\?(cursor=[^"]+)"/.exec(first)
      expect(more).not.toBeNull()
      const second = pageOf(
        yield* runConsoleRoute(gateway, list, consoleRequest(admin, { query: new URLSearchParams(more![1]!) }))
      )
      // 107 people (the administrator, mallory, 105 more): 7 on the second page, and no third.
      expect(second.match(/<tr>\n<th scope="row">/g)).toHaveLength(7)
      expect(second).not.toContain("More people")
      const all = first + second
      expect(all).not.toContain("<script>")
      expect(all).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;")

      // The filter: case-insensitive, on the display name or the username; % and _ are literal.
      const filtered = (q: string) =>
        Effect.map(runConsoleRoute(gateway, list, consoleRequest(admin, { query: new URLSearchParams({ q }) })), pageOf)
      const one = yield* filtered("PERSON 10")
      expect(one.match(/<tr>\n<th scope="row">/g)).toHaveLength(6) // Person 10, 100…104
      expect(one).toContain("Person 104")
      expect(yield* filtered("MALLORY")).toContain("&lt;script&gt;")
      expect(yield* filtered("%")).toContain("No people match here.")
      expect(yield* filtered("_")).toContain("No people match here.")

      // A bad query is refused, naming the parameter.
      const twice = new URLSearchParams([
        ["q", "a"],
        ["q", "b"]
      ])
      expect(problemOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin, { query: twice })))).toMatchObject({
        status: 400,
        message: expect.stringContaining("q:")
      })
      const control = new URLSearchParams({ q: "a\u0000b" })
      expect(problemOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin, { query: control })))).toMatchObject(
        { status: 400, message: expect.stringContaining("q:") }
      )
    })
  )

  it.scoped("a filter looks through at most 2,000 people a page and continues after them", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const admin = yield* builtinAdmin(gateway)
      const found = yield* inGateway(gateway)(
        Effect.gen(function* () {
          const users = yield* UserRepo
          const at = new Date(yield* Clock.currentTimeMillis)
          for (let index = 0; index < 2100; index++) {
            yield* users.insertLocal({ kind: "local", username: `u${index}`, displayName: `Someone ${index}`, at })
          }
          const needle = yield* users.insertLocal({ kind: "local", username: "needle", displayName: "Needle", at })
          return { needle }
        })
      )
      const list = route("GET", "/console/identities")
      let query = new URLSearchParams({ q: "needle" })
      let pages = 0
      let seen = false
      for (;;) {
        const page = pageOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin, { query })))
        pages += 1
        if (page.includes(`/console/identities/${found.needle}`)) seen = true
        const more = /href="\/console\/identities\?([^"]+)"/.exec(page)
        if (more === null) break
        query = new URLSearchParams(more[1]!.replaceAll("&amp;", "&"))
        expect(query.get("q")).toBe("needle")
      }
      // 2,102 people (the administrator too): a window of 2,000, then the last 102; the match is in one.
      expect(seen).toBe(true)
      expect(pages).toBe(2)
    })
  )

  it.scoped(
    "a person's page shows their groups; the form enables, disables and changes direct groups with the revision",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const admin = yield* builtinAdmin(gateway)
        const alice = yield* addUser(gateway, "alice", HOSTILE)
        // Enrolled (a password is set): a local account that never enrolled is enabled only by its link.
        yield* inGateway(gateway)(
          Effect.flatMap(LocalCredentialRepo, (credentials) =>
            credentials.setPassword(alice, "not-a-real-hash", new Date(0))
          )
        )
        const readers = yield* addPermissionGroup(gateway, `Readers ${HOSTILE}`)
        const writers = yield* addPermissionGroup(gateway, "Writers")
        const show = route("GET", "/console/identities/:id")
        const save = route("POST", "/console/identities/:id")

        const before = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin, { params: { id: alice } })))
        expect(before).not.toContain("<script>")
        expect(before).toContain(`<h1>&lt;script&gt;`)
        expect(before).toContain('name="revision" value="1"')
        expect(before).toContain("Member of no group.")

        const saved = yield* runConsoleRoute(
          gateway,
          save,
          consoleRequest(admin, { params: { id: alice }, form: form({ revision: "1", add_group: readers }) })
        )
        expect(saved).toMatchObject({ _tag: "SeeOther", location: `/console/identities/${alice}` })
        // Not ticked: disabled now, and in the group.
        expect(yield* userOf(gateway, alice)).toMatchObject({ status: "disabled", revision: 2 })
        const memberships = yield* inGateway(gateway)(Effect.flatMap(MembershipRepo, (rows) => rows.forUser(alice)))
        expect(memberships.map((row) => [row.group_id, row.source])).toEqual([[readers, "direct"]])
        const events = yield* auditOf(gateway, alice)
        const updated = events.find((event) => event.action === "identity.user_updated")
        expect(updated).toMatchObject({ actor_id: admin.userId, target_kind: "user" })
        expect(JSON.parse(String(updated?.detail))).toMatchObject({
          status: { before: "enabled", after: "disabled" },
          groups_added: [readers]
        })

        const after = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin, { params: { id: alice } })))
        expect(after).toContain(`value="${readers}" checked`)
        expect(after).toContain("Readers &lt;script&gt;")
        expect(after).toContain('name="revision" value="2"')

        // A form rendered at revision 1 is stale now: 412, nothing written.
        const stale = yield* runConsoleRoute(
          gateway,
          save,
          consoleRequest(admin, { params: { id: alice }, form: form({ revision: "1", enabled: "on", group: readers }) })
        )
        expect(problemOf(stale)).toMatchObject({ status: 412, message: expect.stringContaining('"2"') })
        expect((yield* userOf(gateway, alice)).status).toBe("disabled")

        // Enabled, Readers dropped (unticked), Writers added.
        yield* runConsoleRoute(
          gateway,
          save,
          consoleRequest(admin, {
            params: { id: alice },
            form: form({ revision: "2", enabled: "on", add_group: writers })
          })
        )
        expect(yield* userOf(gateway, alice)).toMatchObject({ status: "enabled", revision: 3 })
        const now = yield* inGateway(gateway)(Effect.flatMap(MembershipRepo, (rows) => rows.forUser(alice)))
        expect(now.map((row) => row.group_id)).toEqual([writers])
      })
  )

  it.scoped(
    "a local account waiting for enrolment has no Enabled box: the form changes its groups and keeps it waiting",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const admin = yield* builtinAdmin(gateway)
        const at = new Date(yield* Clock.currentTimeMillis)
        const gina = yield* inGateway(gateway)(
          Effect.flatMap(UserRepo, (users) =>
            users.insertLocal({ kind: "local", username: "gina", displayName: "Gina", at, status: "pending" })
          )
        )
        const readers = yield* addPermissionGroup(gateway, "Readers")
        const show = route("GET", "/console/identities/:id")
        const page = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin, { params: { id: gina } })))
        expect(page).not.toContain('name="enabled"')
        expect(page).toContain('<a href="/console/local-accounts">Local accounts</a>')

        // Even a forged "enabled" is not taken: only the enrolment link enables the account.
        const saved = yield* runConsoleRoute(
          gateway,
          route("POST", "/console/identities/:id"),
          consoleRequest(admin, {
            params: { id: gina },
            form: form({ revision: "1", enabled: "on", add_group: readers })
          })
        )
        expect(saved).toMatchObject({ _tag: "SeeOther" })
        expect(yield* userOf(gateway, gina)).toMatchObject({ status: "pending", revision: 2 })
        const memberships = yield* inGateway(gateway)(Effect.flatMap(MembershipRepo, (rows) => rows.forUser(gina)))
        expect(memberships.map((row) => row.group_id)).toEqual([readers])
      })
  )

  it.scoped(
    "refuses bad person forms precisely and writes nothing: unknown group, oversized or control characters, no such id",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const admin = yield* builtinAdmin(gateway)
        const bob = yield* addUser(gateway, "bob", "Bob")
        const save = route("POST", "/console/identities/:id")
        const post = (fields: Record<string, string>, id: string = bob) =>
          Effect.map(
            runConsoleRoute(gateway, save, consoleRequest(admin, { params: { id }, form: form(fields) })),
            problemOf
          )

        expect(yield* post({ revision: "1", enabled: "on", add_group: "no-such-group" })).toMatchObject({
          status: 400,
          message: expect.stringContaining('groups[0]: no group "no-such-group"')
        })
        expect(yield* post({ revision: "1", enabled: "on", add_group: "g".repeat(129) })).toMatchObject({
          status: 400,
          message: expect.stringContaining("groups[0]")
        })
        expect(yield* post({ revision: "1", enabled: "on", add_group: "a\u0000b" })).toMatchObject({
          status: 400,
          message: expect.stringContaining("add_group: must not contain control characters")
        })
        expect(yield* post({ revision: "zero", enabled: "on" })).toMatchObject({
          status: 400,
          message: expect.stringContaining("revision:")
        })
        expect(yield* post({ revision: "1" }, "no-such-person")).toMatchObject({ status: 404 })
        const show = route("GET", "/console/identities/:id")
        expect(
          problemOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin, { params: { id: "no-such-person" } })))
        ).toMatchObject({ status: 404 })
        expect(yield* userOf(gateway, bob)).toMatchObject({ status: "enabled", revision: 1 })
        expect(yield* auditOf(gateway, bob)).toEqual([])
      })
  )
})

describe.each(storeKinds)("console: groups (%s)", (kind) => {
  it.scoped("lists groups (the built-in one on an empty store) and creates a permission group as the API does", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const admin = yield* builtinAdmin(gateway)
      const list = route("GET", "/console/groups")
      const create = route("POST", "/console/groups")
      const empty = pageOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin)))
      expect(empty).toContain("Administrators")
      expect(empty).toContain('<label for="new-group-name">Name</label>')
      expect(empty).toContain("<caption>Groups</caption>")
      // The built-in Administrators group and its one member, the built-in administrator.
      expect(empty).toMatch(
        /Administrators<\/a> <span class="muted">\(built-in\)<\/span><\/th>\n<td>permission group<\/td>\n<td>yes<\/td>\n<td>1<\/td>/
      )

      const created = yield* runConsoleRoute(
        gateway,
        create,
        consoleRequest(admin, { form: form({ name: `Ops ${HOSTILE}`, enabled: "on" }) })
      )
      if (created instanceof ConsoleProblem || created._tag !== "SeeOther") throw new Error("expected a redirect")
      const id = decodeURIComponent(created.location.replace("/console/groups/", ""))
      expect(yield* groupOf(gateway, id)).toMatchObject({ name: `Ops ${HOSTILE}`, enabled: true, kind: "permission" })
      expect((yield* auditOf(gateway, id)).map((event) => event.action)).toEqual(["identity.group_created"])
      const listed = pageOf(yield* runConsoleRoute(gateway, list, consoleRequest(admin)))
      expect(listed).not.toContain("<script>")
      expect(listed).toContain("Ops &lt;script&gt;")

      const refused = (fields: Record<string, string>) =>
        Effect.map(runConsoleRoute(gateway, create, consoleRequest(admin, { form: form(fields) })), problemOf)
      expect(yield* refused({ name: "x".repeat(201) })).toMatchObject({
        status: 400,
        message: expect.stringContaining("name: must be at most 200 characters")
      })
      expect(yield* refused({ name: "a\u0007b" })).toMatchObject({
        status: 400,
        message: "name: must not contain control characters"
      })
      expect(yield* refused({ name: `ops ${HOSTILE}` })).toMatchObject({ status: 409 })
    })
  )

  it.scoped(
    "edits a permission group's name, roles, scopes and access entries at its revision; a stale form is 412",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const admin = yield* builtinAdmin(gateway)
        const id = yield* addPermissionGroup(gateway, "CRM", {
          access: [
            {
              endpoint_id: "crm",
              tools: ["search"],
              resource_rules: [{ argument: "/region", allowed_values: ["emea"] }]
            }
          ]
        })
        const show = route("GET", "/console/groups/:id")
        const save = route("POST", "/console/groups/:id")
        const page = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin, { params: { id } })))
        expect(page).toContain('name="access.0.endpoint_id" value="crm"')
        expect(page).toContain('name="access.1.endpoint_id" value=""')
        expect(page).toContain("&quot;/region&quot;")
        // Every input has a label.
        const inputs = [...page.matchAll(/<(?:input|textarea|select)[^>]*>/g)].map((match) => match[0])
        for (const input of inputs.filter((tag) => !tag.includes('type="hidden"'))) {
          const id = /id="([^"]+)"/.exec(input)?.[1]
          const wrapped = page.includes(`<label>${input}`)
          expect([input, wrapped || (id !== undefined && page.includes(`<label for="${id}"`))]).toEqual([input, true])
        }

        const fields = {
          revision: "1",
          name: "CRM editors",
          enabled: "on",
          role: "approver",
          scopes: "crm:read\ncrm:write\n",
          "access.0.endpoint_id": "crm",
          "access.0.tools": "search\nupdate_account",
          "access.0.allow_write_requests": "on",
          "access.0.resource_rules": '[{"argument": "/region", "allowed_values": ["emea", "apac"]}]',
          "access.1.endpoint_id": "billing",
          "access.1.tools": "*",
          "access.1.resource_rules": "[]"
        }
        const saved = yield* runConsoleRoute(
          gateway,
          save,
          consoleRequest(admin, { params: { id }, form: form(fields) })
        )
        expect(saved).toMatchObject({ _tag: "SeeOther", location: `/console/groups/${id}` })
        const group = yield* groupOf(gateway, id)
        expect(group).toMatchObject({ name: "CRM editors", revision: 2 })
        expect(group?.permissions).toMatchObject({
          roles: ["approver"],
          scopes: ["crm:read", "crm:write"],
          access: [
            {
              endpoint_id: "crm",
              tools: ["search", "update_account"],
              allow_write_requests: true,
              resource_rules: [{ argument: "/region", allowed_values: ["emea", "apac"] }]
            },
            { endpoint_id: "billing", tools: ["*"], allow_write_requests: false }
          ]
        })
        const updated = (yield* auditOf(gateway, id)).find((event) => event.action === "identity.group_updated")
        expect(updated).toMatchObject({ actor_id: admin.userId, target_kind: "group" })

        const post = (changed: Record<string, string>) =>
          Effect.map(
            runConsoleRoute(
              gateway,
              save,
              consoleRequest(admin, { params: { id }, form: form({ ...fields, ...changed }) })
            ),
            problemOf
          )
        expect(yield* post({ revision: "1" })).toMatchObject({ status: 412 })
        expect(yield* post({ revision: "2", "access.0.endpoint_id": "Not An Id" })).toMatchObject({
          status: 400,
          message: expect.stringContaining("access[0].endpoint_id")
        })
        expect(yield* post({ revision: "2", "access.0.resource_rules": "{not json" })).toMatchObject({
          status: 400,
          message: "access[0].resource_rules: not valid JSON"
        })
        expect(yield* post({ revision: "2", scopes: "gateway:admin" })).toMatchObject({
          status: 400,
          message: expect.stringContaining("administrative scope")
        })
        expect(yield* post({ revision: "2", name: "" })).toMatchObject({
          status: 400,
          message: expect.stringContaining("name")
        })
        expect((yield* groupOf(gateway, id))?.revision).toBe(2)
        expect(
          problemOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin, { params: { id: "nope" } })))
        ).toMatchObject({ status: 404 })
      })
  )

  it.scoped(
    "only the built-in administrator maps organization groups: another administrator's change is refused with 403",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const builtin = yield* builtinAdmin(gateway)
        const carol = yield* addUser(gateway, "carol", "Carol")
        const other = { ...builtin, userId: carol, kind: "local" as const }
        const [sales] = yield* inGateway(gateway)(
          Effect.gen(function* () {
            const at = new Date(yield* Clock.currentTimeMillis)
            return yield* (yield* GroupRepo).upsertOrganizationGroups(
              "oidc:test",
              "group",
              [{ externalId: "sales", name: "Sales" }],
              at
            )
          })
        )
        const id = yield* addPermissionGroup(gateway, "Sales tools")
        const show = route("GET", "/console/groups/:id")
        const save = route("POST", "/console/groups/:id")
        const base = { revision: "1", name: "Sales tools", enabled: "on", source_groups: sales! }

        const seen = pageOf(
          yield* runConsoleRoute(gateway, show, consoleRequest(other as ConsoleRequest["admin"], { params: { id } }))
        )
        expect(seen).toContain("Only the built-in administrator may change these mappings")
        const refused = yield* runConsoleRoute(
          gateway,
          save,
          consoleRequest(other as ConsoleRequest["admin"], { params: { id }, form: form(base) })
        )
        expect(problemOf(refused)).toMatchObject({
          status: 403,
          message: "Only the built-in administrator may map organization groups to permission groups."
        })
        expect((yield* groupOf(gateway, id))?.source_groups).toEqual([])

        yield* runConsoleRoute(gateway, save, consoleRequest(builtin, { params: { id }, form: form(base) }))
        expect((yield* groupOf(gateway, id))?.source_groups).toEqual([sales])
        const mapped = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(builtin, { params: { id } })))
        expect(mapped).toContain(`<li>Sales <code>${sales}</code></li>`)
        // The organization group itself: only "enabled" is offered.
        const org = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(builtin, { params: { id: sales! } })))
        expect(org).toContain("only whether it is enabled can change here")
        expect(org).not.toContain('name="name"')
        // The other administrator may still change what is not a mapping.
        const renamed = yield* runConsoleRoute(
          gateway,
          save,
          consoleRequest(other as ConsoleRequest["admin"], {
            params: { id },
            form: form({ ...base, revision: "2", name: "Sales" })
          })
        )
        expect(renamed).toMatchObject({ _tag: "SeeOther" })
      })
  )
})
