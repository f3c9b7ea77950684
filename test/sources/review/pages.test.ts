/**
 * docs/tool-sources.md, "Configuration review": the review pages over real HTTP against an in-process
 * gateway (built-in authorization server, stored policy, both stores). `ConfigChanges` is the test
 * stand-in over state in memory (test/support/config-changes.ts) until the live service is merged.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken } from "../../support/admin-api.js"
import { decide, reviewGateway, send, signedInPerson } from "../../support/config-review.js"
import { storeKinds } from "../../support/databases.js"
import { LogCapture } from "../../support/logs.js"
import { oauthGateway } from "../../support/oauth-gateway.js"

const refusals = (logs: LogCapture) => logs.events("config.review_refused").map((line) => line["reason"])

describe.each(storeKinds)("configuration review pages (%s)", (kind) => {
  it.scoped(
    "a security reviewer sees the pending proposals and a readable diff: escaped, hidden characters shown, secrets as configured",
    () =>
      Effect.gen(function* () {
        const { gateway, changes } = yield* reviewGateway({ kind })
        const admin = yield* signedInPerson(gateway, ["admin"])
        const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
        const id = changes.propose({
          proposer: { user_id: admin.userId, name: admin.name },
          target_id: "notes",
          action: "update",
          diff: [
            { path: "/url", before: "https://old.example/mcp", after: "https://new.example/mcp" },
            { path: "/description", before: undefined, after: "<script>alert(1)</script> admin\u202Egnp.exe" },
            { path: "/headers/x-api-key", before: { configured: true }, after: { configured: true } },
            { path: '/tool_rules/0/"><b>x</b>', before: null, after: ["\u200Bzero-width"] }
          ]
        })
        // A proposer's name is someone's own text, too.
        const hostile = changes.propose({
          proposer: { user_id: admin.userId, name: '<a href="https://evil.example">Ada</a>\u2066' },
          target_id: "x<y"
        })

        const list = yield* send(gateway, "/auth/reviews", { headers: { cookie: reviewer.cookie } })
        expect(list.status).toBe(200)
        expect(list.text).toContain(`href="/auth/reviews/${id}"`)
        expect(list.text).toContain("Update Backend <code>notes</code>")
        expect(list.text).toContain(`proposed by ${admin.name} (${admin.userId})`)

        const page = yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: reviewer.cookie } })
        expect(page.status).toBe(200)
        expect(page.headers.get("content-security-policy")).toContain("default-src 'none'")
        expect(page.headers.get("cache-control")).toBe("no-store")
        expect(page.text).toContain("<main>")
        expect(page.text).toContain('<th scope="col">Before</th>')
        expect(page.text).toContain("https://old.example/mcp")
        expect(page.text).toContain("https://new.example/mcp")
        // Markup is text, the right-to-left override is shown as an escape, and it is pointed out.
        expect(page.text).not.toContain("<script>")
        expect(page.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;")
        expect(page.text).not.toContain("\u202E")
        expect(page.text).toContain("admin\\u202egnp.exe")
        expect(page.text).toContain('id="hidden-characters"')
        expect(page.text).toContain("&quot;configured&quot;: true")
        expect(page.text).toContain('<span class="muted">(absent)</span>')
        // Both decisions are forms with the sign-in's anti-CSRF token: no JavaScript needed.
        expect(page.text).toContain(`<form method="post" action="/auth/reviews/${id}/approve"`)
        expect(page.text).toContain(`<form method="post" action="/auth/reviews/${id}/reject"`)
        expect(page.text).toContain(`name="csrf" value="${reviewer.csrf}"`)
        expect(page.text).not.toContain("<b>")
        expect(page.text).toContain("/tool_rules/0/&quot;&gt;&lt;b&gt;x&lt;/b&gt;")
        expect(page.text).toContain("\\u200bzero-width")
        expect(page.text).not.toContain("\u200B")

        const other = yield* send(gateway, `/auth/reviews/${hostile}`, { headers: { cookie: reviewer.cookie } })
        expect(other.text).not.toContain('<a href="https://evil.example">')
        expect(other.text).toContain("&lt;a href=&quot;https://evil.example&quot;&gt;Ada&lt;/a&gt;\\u2066")
        expect(other.text).toContain("<code>x&lt;y</code>")
        const listed = yield* send(gateway, "/auth/reviews", { headers: { cookie: reviewer.cookie } })
        expect(listed.text).not.toContain('<a href="https://evil.example">')
      })
  )

  it.scoped("approving applies the change and the page says so; rejecting leaves it rejected", () =>
    Effect.gen(function* () {
      const { gateway, changes } = yield* reviewGateway({ kind })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const first = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      const second = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })

      const approved = yield* decide(gateway, reviewer, first, "approve")
      expect(approved.status).toBe(303)
      expect(approved.headers.get("location")).toBe(`/auth/reviews/${first}?done=approve`)
      expect(changes.applied).toEqual([first])
      expect(changes.get(first)?.decided_by).toEqual({ user_id: reviewer.userId, name: reviewer.name })
      const after = yield* send(gateway, `/auth/reviews/${first}?done=approve`, {
        headers: { cookie: reviewer.cookie }
      })
      expect(after.text).toContain("You approved this change.")
      expect(after.text).toContain("Applied: the change is active.")
      expect(after.text).not.toContain('id="approve"')

      const rejected = yield* decide(gateway, reviewer, second, "reject")
      expect(rejected.status).toBe(303)
      expect(changes.get(second)?.state).toBe("rejected")
      expect(changes.applied).toEqual([first])

      // A decided proposal is decided: a second press changes nothing.
      const again = yield* decide(gateway, reviewer, first, "approve")
      expect(again.status).toBe(409)
      expect(again.text).toContain("no longer waiting for review")
      // The list shows only what still waits.
      const list = yield* send(gateway, "/auth/reviews", { headers: { cookie: reviewer.cookie } })
      expect(list.text).toContain('id="no-proposals"')
    })
  )

  it.scoped("an application that fails says a fresh proposal is needed, on the answer and on the page", () =>
    Effect.gen(function* () {
      const { gateway, changes } = yield* reviewGateway({ kind })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      changes.failNext("target_changed")
      const answer = yield* decide(gateway, reviewer, id, "approve")
      expect(answer.status).toBe(409)
      expect(answer.text).toContain("a fresh proposal is needed")
      expect(changes.applied).toEqual([])
      const page = yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: reviewer.cookie } })
      expect(page.text).toContain('data-state="failed"')
      expect(page.text).toMatch(/id="outcome"[^>]*>The application failed: .*a fresh proposal is needed\./)
    })
  )

  it.scoped("self-review is refused: no buttons for one's own proposal, and a post is refused before the service", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const { gateway, changes } = yield* reviewGateway({ kind, logs })
      // An administrator who is a security reviewer too proposes, then tries to approve.
      const both = yield* signedInPerson(gateway, ["admin", "security_reviewer"])
      const id = changes.propose({ proposer: { user_id: both.userId, name: both.name } })
      const page = yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: both.cookie } })
      expect(page.status).toBe(200)
      expect(page.text).not.toContain('id="approve"')
      expect(page.text).not.toContain('id="reject"')
      expect(page.text).toContain("You proposed this change: another security reviewer must decide it.")
      for (const action of ["approve", "reject"] as const) {
        const answer = yield* decide(gateway, both, id, action)
        expect(answer.status).toBe(403)
      }
      expect(changes.calls).toEqual([])
      expect(changes.get(id)?.state).toBe("pending_approval")
      expect(refusals(logs)).toEqual(["self_review", "self_review"])
      expect(logs.events("config.review_refused")[0]).toMatchObject({
        action: "approve",
        proposal_id: id,
        user_id: both.userId
      })
    })
  )

  it.scoped("the configuration service's own self-review refusal is answered 403 and logged as such", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const { gateway, changes } = yield* reviewGateway({ kind, logs })
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const id = changes.propose({ proposer: { user_id: reviewer.userId, name: reviewer.name } })
      changes.disguise(id, { user_id: "someone-else", name: "Someone else" })
      const answer = yield* decide(gateway, reviewer, id, "approve")
      expect(answer.status).toBe(403)
      expect(answer.text).toContain("another security reviewer must decide it")
      expect(changes.get(id)?.state).toBe("pending_approval")
      expect(changes.applied).toEqual([])
      expect(refusals(logs)).toEqual(["self_review"])
    })
  )

  it.scoped(
    "an API token cannot review: an administrator's valid bearer token is refused without a browser session and with one",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const { gateway, changes } = yield* reviewGateway({ kind, logs })
        const admin = yield* signedInPerson(gateway, ["admin"])
        const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
        const token = yield* adminToken(gateway)
        const bearer = { authorization: `Bearer ${token}` }
        const alone = yield* send(gateway, `/auth/reviews/${id}/approve`, {
          headers: { ...bearer, origin: gateway.baseUrl },
          form: {}
        })
        expect(alone.status).toBe(403)
        expect(alone.text).toContain("API tokens cannot review them")
        const page = yield* send(gateway, `/auth/reviews/${id}`, { headers: bearer })
        expect(page.status).toBe(403)
        // Even beside a security reviewer's browser session, a request carrying a bearer token is no form of the pages.
        const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
        const withSession = yield* decide(gateway, reviewer, id, "approve", bearer)
        expect(withSession.status).toBe(403)
        expect(changes.calls).toEqual([])
        expect(refusals(logs)).toEqual(["api_token", "api_token", "api_token"])
      })
  )

  it.scoped("a post without the form's anti-CSRF token, or with another sign-in's, is refused", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const { gateway, changes } = yield* reviewGateway({ kind, logs })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const other = yield* signedInPerson(gateway, ["security_reviewer"])
      const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      const none = yield* decide(gateway, reviewer, id, "approve", {}, {})
      expect(none.status).toBe(403)
      const foreign = yield* decide(gateway, reviewer, id, "approve", {}, { csrf: other.csrf })
      expect(foreign.status).toBe(403)
      const twice = yield* send(gateway, `/auth/reviews/${id}/approve`, {
        headers: { cookie: reviewer.cookie, origin: gateway.baseUrl },
        method: "POST",
        form: { csrf: reviewer.csrf, "": "" }
      })
      expect(twice.status).toBe(303)
      expect(changes.calls.map((call) => call.reviewer.user_id)).toEqual([reviewer.userId])
      expect(refusals(logs)).toEqual(["csrf", "csrf"])
    })
  )

  it.scoped("a post from another origin is refused, by Origin and by Fetch metadata", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const { gateway, changes } = yield* reviewGateway({ kind, logs })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      const byOrigin = yield* decide(gateway, reviewer, id, "approve", { origin: "https://evil.example" })
      expect(byOrigin.status).toBe(403)
      expect(byOrigin.text).toContain("not submitted from the gateway")
      const bySite = yield* decide(gateway, reviewer, id, "reject", { "sec-fetch-site": "same-site" })
      expect(bySite.status).toBe(403)
      expect(changes.calls).toEqual([])
      expect(refusals(logs)).toEqual(["foreign_origin", "foreign_origin"])
    })
  )

  it.scoped(
    "without the security reviewer's scope nobody reviews: a plain user, the administrator role, the write approver role",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const { gateway, changes } = yield* reviewGateway({ kind, logs })
        const proposer = yield* signedInPerson(gateway, ["admin"])
        const id = changes.propose({ proposer: { user_id: proposer.userId, name: proposer.name } })
        for (const roles of [[], ["admin"], ["approver"], ["admin", "approver"]]) {
          const person = yield* signedInPerson(gateway, roles)
          const list = yield* send(gateway, "/auth/reviews", { headers: { cookie: person.cookie } })
          expect(list.status).toBe(403)
          expect(list.text).toContain("needs the security reviewer role")
          expect((yield* decide(gateway, person, id, "approve")).status).toBe(403)
        }
        expect(changes.calls).toEqual([])
        expect(refusals(logs)).toEqual(Array(8).fill("not_security_reviewer"))
        // Whether a proposal exists is not told either; and past 10 refusals a minute from one client
        // address the log leaves the rest out.
        const person = yield* signedInPerson(gateway, ["approver"])
        for (const path of [`/auth/reviews/${id}`, "/auth/reviews/prp_nothing", "/auth/reviews/prp_other"]) {
          expect((yield* send(gateway, path, { headers: { cookie: person.cookie } })).status).toBe(403)
        }
        expect(refusals(logs)).toHaveLength(10)
      })
  )

  it.scoped("required_scopes names the security scope: a permission group's scope counts as well as the role", () =>
    Effect.gen(function* () {
      const { gateway, changes } = yield* reviewGateway({ kind, policyChanges: { required_scopes: ["corp:security"] } })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      const byRole = yield* signedInPerson(gateway, ["security_reviewer"])
      expect((yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: byRole.cookie } })).status).toBe(200)
      // The default scope no longer makes a reviewer when required_scopes names another.
      const oldScope = yield* signedInPerson(gateway, [], { scopes: ["gateway:security"] })
      expect((yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: oldScope.cookie } })).status).toBe(403)
    })
  )

  it.scoped(
    "subjects, when listed, names the reviewers: an unlisted security reviewer is refused, a listed one decides",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const { gateway, changes } = yield* reviewGateway({
          kind,
          logs,
          policyChanges: { subjects: ["local:rita", "local:sam"] }
        })
        const admin = yield* signedInPerson(gateway, ["admin"])
        const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
        const unlisted = yield* signedInPerson(gateway, ["security_reviewer"])
        expect((yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: unlisted.cookie } })).status).toBe(403)
        expect((yield* decide(gateway, unlisted, id, "approve")).status).toBe(403)
        // Listed without the role: the list narrows who of the security reviewers decide; it grants nothing.
        const listedOnly = yield* signedInPerson(gateway, [], { username: "rita" })
        expect((yield* decide(gateway, listedOnly, id, "approve")).status).toBe(403)
        expect(changes.calls).toEqual([])
        expect(refusals(logs)).toEqual(["not_listed", "not_listed", "not_security_reviewer"])
        const sam = yield* signedInPerson(gateway, ["security_reviewer"], { username: "sam" })
        expect((yield* decide(gateway, sam, id, "approve")).status).toBe(303)
        expect(changes.applied).toEqual([id])
      })
  )

  it.scoped("with require_step_up, approving needs a step-up a local sign-in cannot give; rejecting does not", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const { gateway, changes } = yield* reviewGateway({
        kind,
        logs,
        policyChanges: { require_step_up: true },
        patch: { approvals: { step_up: { acr_values: ["urn:gateway:mfa"] } } }
      })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      const page = yield* send(gateway, `/auth/reviews/${id}`, { headers: { cookie: reviewer.cookie } })
      expect(page.text).not.toContain('id="approve"')
      expect(page.text).not.toContain('id="step-up"')
      expect(page.text).toContain("A local, LDAP or OAuth2 sign-in cannot provide it.")
      expect(page.text).toContain('id="reject"')
      const approve = yield* decide(gateway, reviewer, id, "approve")
      expect(approve.status).toBe(409)
      expect(changes.calls).toEqual([])
      const stepUp = yield* send(gateway, `/auth/reviews/${id}/step-up?csrf=${reviewer.csrf}`, {
        headers: { cookie: reviewer.cookie }
      })
      expect(stepUp.status).toBe(403)
      expect(stepUp.text).toContain("Step-up not available")
      expect((yield* decide(gateway, reviewer, id, "reject")).status).toBe(303)
      expect(refusals(logs)).toEqual(["step_up_required"])
    })
  )
})

describe("configuration review: signing in and addresses", () => {
  it.scoped(
    "/auth/login?role=security sends the browser through /sso to the proposal, or straight there when signed in",
    () =>
      Effect.gen(function* () {
        const { gateway, changes } = yield* reviewGateway()
        const admin = yield* signedInPerson(gateway, ["admin"])
        const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
        const out = yield* send(gateway, `/auth/login?role=security&proposal=${id}`)
        expect(out.status).toBe(303)
        expect(out.headers.get("location")).toBe(`/sso?next=${encodeURIComponent(`/auth/reviews/${id}`)}`)
        const toList = yield* send(gateway, "/auth/login?role=security")
        expect(toList.headers.get("location")).toBe(`/sso?next=${encodeURIComponent("/auth/reviews")}`)
        // The sign-in page accepts the review page as where to come back to (and nothing else).
        const signIn = yield* send(gateway, out.headers.get("location")!)
        expect(signIn.status).toBe(200)
        expect(signIn.text).toContain('id="username"')
        const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
        const back = yield* send(gateway, `/auth/login?role=security&proposal=${id}`, {
          headers: { cookie: reviewer.cookie }
        })
        expect(back.headers.get("location")).toBe(`/auth/reviews/${id}`)
        const signedInAtSso = yield* send(gateway, `/sso?next=${encodeURIComponent(`/auth/reviews/${id}`)}`, {
          headers: { cookie: reviewer.cookie }
        })
        expect(signedInAtSso.headers.get("location")).toBe(`/auth/reviews/${id}`)
        const elsewhere = yield* send(gateway, `/sso?next=${encodeURIComponent("/auth/reviews/../../evil")}`, {
          headers: { cookie: reviewer.cookie }
        })
        expect(elsewhere.headers.get("location")).toBe("/sso/grants")
      })
  )

  it.scoped("a link with another role, two roles or a malformed proposal is a 400 page", () =>
    Effect.gen(function* () {
      const { gateway } = yield* reviewGateway()
      for (const query of [
        "",
        "?role=admin",
        "?role=security&role=security",
        "?role=security&proposal=a/b",
        "?role=security&proposal=%3Cscript%3E",
        "?role=security&proposal=x&proposal=y",
        `?role=security&proposal=${"a".repeat(65)}`
      ]) {
        const answer = yield* send(gateway, `/auth/login${query}`)
        expect(answer.status, query).toBe(400)
        expect(answer.text).not.toContain("<script>")
      }
    })
  )

  it.scoped("signed out: the pages send the browser to sign in; a post is refused (403)", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const { gateway, changes } = yield* reviewGateway({ logs })
      const admin = yield* signedInPerson(gateway, ["admin"])
      const id = changes.propose({ proposer: { user_id: admin.userId, name: admin.name } })
      const page = yield* send(gateway, `/auth/reviews/${id}`)
      expect(page.status).toBe(303)
      expect(page.headers.get("location")).toBe(`/sso?next=${encodeURIComponent(`/auth/reviews/${id}`)}`)
      const post = yield* send(gateway, `/auth/reviews/${id}/approve`, {
        headers: { origin: gateway.baseUrl },
        form: { csrf: admin.csrf }
      })
      expect(post.status).toBe(403)
      expect(refusals(logs)).toEqual(["not_signed_in"])
      expect(changes.calls).toEqual([])
    })
  )

  it.scoped("an unknown or malformed proposal is 404; other methods are 405", () =>
    Effect.gen(function* () {
      const { gateway } = yield* reviewGateway()
      const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
      const headers = { cookie: reviewer.cookie }
      expect((yield* send(gateway, "/auth/reviews/prp_unknown", { headers })).status).toBe(404)
      expect((yield* send(gateway, "/auth/reviews/%00", { headers })).status).toBe(404)
      expect((yield* decide(gateway, reviewer, "prp_unknown", "approve")).status).toBe(404)
      expect((yield* send(gateway, "/auth/reviews", { method: "DELETE", headers })).status).toBe(405)
      expect((yield* send(gateway, "/auth/reviews/prp_x/approve", { headers })).status).toBe(405)
    })
  )

  it.scoped(
    "a gateway's own configuration-change service serves the pages: nothing pending is an empty list (200)",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ patch: { admin: { approvals: { policy_changes: { enabled: true } } } } })
        const reviewer = yield* signedInPerson(gateway, ["security_reviewer"])
        const answer = yield* send(gateway, "/auth/reviews", { headers: { cookie: reviewer.cookie } })
        expect(answer.status).toBe(200)
        expect(answer.text).not.toContain("/auth/reviews/")
      })
  )

  it.scoped("in external mode there is no browser sign-in: the review paths are 404", () =>
    Effect.gen(function* () {
      const { gateway } = yield* reviewGateway({
        policyChanges: { enabled: false },
        auth: () => ({
          mode: "external",
          issuer: "https://idp.example.com",
          external: { jwks_url: "https://idp.example.com/jwks" }
        })
      })
      expect((yield* send(gateway, "/auth/login?role=security")).status).toBe(404)
      expect((yield* send(gateway, "/auth/reviews")).status).toBe(404)
    })
  )
})
