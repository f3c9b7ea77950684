/**
 * The console's core (docs/console.md) in a real browser — Debian Chromium driven by playwright-core —
 * against a gateway in `admin.mode: remote` whose `admin.public_url` is its admin listener on loopback:
 * sign-in through the gateway's own pages (password and TOTP), the overview, refusals of a POST without
 * the CSRF token or from another origin, a stale form's 412, sign-out, and the end of console access
 * when the person is disabled or their session revoked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { ConsoleSectionList } from "../../src/admin/console/app.js"
import { consoleSections } from "../../src/admin/console/pages/index.js"
import { ConsoleProblem, type ConsoleSection } from "../../src/admin/console/route.js"
import { ConsoleSessions } from "../../src/admin/console/sessions.js"
import { html } from "../../src/auth/pages/html.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { UserRepo } from "../../src/store/users.js"
import { addLocalUser } from "../support/admin-api.js"
import { launchChromium, watchedBrowsers } from "../support/browser.js"
import { consoleSignIn, csrfOf, remoteConsole, type TotpSecrets } from "../support/console.js"
import { storeKinds } from "../support/databases.js"
import { createGroup, testActor } from "../support/grants.js"
import { LogCapture } from "../support/logs.js"
import { ADMIN_PASSWORD, inGateway, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const chromiumBrowser = Effect.acquireRelease(promise(launchChromium), (browser) => promise(() => browser.close()))

/** A record with a revision, edited by a form that carries the revision it was rendered with (test only). */
const testRecord = { name: "first", revision: 1 }
const testSection: ConsoleSection = {
  nav: [{ label: "Test record", path: "/console/test-record" }],
  routes: [
    {
      method: "GET",
      path: "/console/test-record",
      handler: (request) =>
        Effect.sync(() => ({
          _tag: "Page" as const,
          title: "Test record",
          body: html`<form method="post" action="/console/test-record">${request.csrfField}
<input type="hidden" name="revision" value="${testRecord.revision}">
<label for="name">Name</label><input type="text" id="name" name="name" value="${testRecord.name}">
<button type="submit">Save</button></form>`
        }))
    },
    {
      method: "POST",
      path: "/console/test-record",
      handler: (request) =>
        request.form.get("revision") !== String(testRecord.revision)
          ? Effect.fail(new ConsoleProblem({ status: 412, message: "The record changed since the form was opened." }))
          : Effect.sync(() => {
              testRecord.name = request.form.get("name") ?? ""
              testRecord.revision += 1
              return { _tag: "SeeOther" as const, location: "/console/test-record", notice: "Saved." }
            })
    }
  ]
}
const withTestSection = Layer.succeed(ConsoleSectionList, [...consoleSections, testSection])

describe.each(storeKinds)("the console in remote mode (%s)", (kind) => {
  it.scopedLive(
    "an administrator signs in with password and TOTP and sees the overview; a disabled one is refused on the next request",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const gateway = yield* oauthGateway(remoteConsole({ kind, logs }))
        const chromium = yield* chromiumBrowser
        const { problems, open } = watchedBrowsers(chromium)
        const secrets: TotpSecrets = new Map()
        const ops = yield* addLocalUser(gateway, "ops", "ops password that is long")
        const auditor = yield* addLocalUser(gateway, "auditor", "auditor password that is long")
        yield* inGateway(gateway)(
          Effect.gen(function* () {
            const adminRole = yield* createGroup([], { roles: ["admin"] })
            for (const id of [ops, auditor]) {
              yield* (yield* PolicyWrites).updateUser(testActor, id, 1, { enabled: true, groups: [adminRole] })
            }
          })
        )

        const admin = yield* promise(open)
        yield* promise(() => consoleSignIn(admin.page, gateway.adminUrl, "admin", ADMIN_PASSWORD, secrets))
        expect(yield* promise(() => admin.page.textContent("h1"))).toBe("Overview")
        expect(yield* promise(() => admin.page.title())).toBe("Overview — Gateway console")
        const overview = (yield* promise(() => admin.page.textContent("main"))) ?? ""
        expect(overview).toContain("generation 1: ready")
        expect(overview).toContain("Approval webhooks")
        expect(overview).toMatch(/one query took [0-9.]+ ms/)
        expect(yield* promise(() => admin.page.getAttribute("nav a[aria-current=page]", "href"))).toBe("/console")
        // The session cookie: HttpOnly, Secure, SameSite=Strict, the console's path only.
        const cookies = yield* promise(() => admin.context.cookies(gateway.adminUrl + "/console"))
        expect(cookies.find((cookie) => cookie.name === "gateway_console")).toMatchObject({
          httpOnly: true,
          secure: true,
          sameSite: "Strict",
          path: "/console"
        })
        expect(logs.events("console.signed_in")).toHaveLength(1)

        const other = yield* promise(open)
        yield* promise(() => consoleSignIn(other.page, gateway.adminUrl, "ops", "ops password that is long", secrets))
        expect(yield* promise(() => other.page.textContent("h1"))).toBe("Overview")
        // Disabling a person revokes their sessions: the console's next request is refused.
        yield* inGateway(gateway)(
          Effect.flatMap(PolicyWrites, (writes) => writes.updateUser(testActor, ops, 2, { enabled: false }))
        )
        const refused = yield* promise(() => other.page.goto(`${gateway.adminUrl}/console`))
        expect(refused?.status()).toBe(401)
        expect(yield* promise(() => other.page.textContent("main"))).toContain("Your sign-in has ended")
        expect(logs.events("console.access_refused")).toMatchObject([{ user_id: ops, reason: "invalid_token" }])
        // The console session ended with it: the next visit starts a sign-in.
        yield* promise(() => other.page.goto(`${gateway.adminUrl}/console`))
        expect(yield* promise(() => other.page.title())).toBe("Sign in")

        // Losing the admin role (the session stays) ends console access on the next request too.
        const third = yield* promise(open)
        yield* promise(() =>
          consoleSignIn(third.page, gateway.adminUrl, "auditor", "auditor password that is long", secrets)
        )
        yield* inGateway(gateway)(
          Effect.flatMap(PolicyWrites, (writes) =>
            writes.updateUser(testActor, auditor, 2, { enabled: true, groups: [] })
          )
        )
        const demoted = yield* promise(() => third.page.goto(`${gateway.adminUrl}/console`))
        expect(demoted?.status()).toBe(403)
        expect(yield* promise(() => third.page.textContent("main"))).toContain("The console is for administrators")
        expect(logs.events("console.access_refused")[1]).toMatchObject({
          user_id: auditor,
          reason: "insufficient_scope"
        })

        // A revoked session ends console access on the next request too.
        const adminId = (yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))).pipe(
          (found) => (found._tag === "Some" ? found.value.id : "")
        )
        const now = yield* Clock.currentTimeMillis
        yield* inGateway(gateway)(
          Effect.flatMap(SessionRepo, (sessions) =>
            sessions.revokeForUser(adminId, "administrator_reset", new Date(now))
          )
        )
        const ended = yield* promise(() => admin.page.goto(`${gateway.adminUrl}/console`))
        expect(ended?.status()).toBe(401)
        expect(yield* promise(() => admin.page.textContent("main"))).toContain("Your sign-in has ended")
        expect(problems).toEqual({ csp: [], dialogs: [], errors: [] })
      }),
    // Two sign-ins in Chromium with scrypt and TOTP enrolment: ~15 s alone, twice that beside another worker.
    60_000
  )
})

describe("the console's forms", () => {
  it.scopedLive(
    "a POST without the CSRF token or from another origin is refused 403; a stale form shows 412; sign-out ends the session",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const gateway = yield* oauthGateway(remoteConsole({ logs, extraServices: withTestSection }))
        const chromium = yield* chromiumBrowser
        const { problems, open } = watchedBrowsers(chromium)
        const { page, context } = yield* promise(open)
        yield* promise(() =>
          consoleSignIn(page, gateway.adminUrl, "admin", ADMIN_PASSWORD, new Map(), "/console/test-record")
        )
        expect(yield* promise(() => page.textContent("h1"))).toBe("Test record")
        const csrf = yield* promise(() => csrfOf(page))
        expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/)
        const post = (form: Record<string, string>, headers: Record<string, string>) =>
          promise(async () => {
            const response = await context.request.post(`${gateway.adminUrl}/console/test-record`, {
              form,
              headers,
              maxRedirects: 0
            })
            return { status: response.status(), text: await response.text() }
          })
        const sameOrigin = { origin: gateway.adminUrl }

        const noToken = yield* post({ revision: "1", name: "forged" }, sameOrigin)
        expect(noToken.status).toBe(403)
        expect(noToken.text).toContain("security token is missing or out of date")
        const wrongToken = yield* post({ revision: "1", name: "forged", csrf: `${csrf.slice(1)}x` }, sameOrigin)
        expect(wrongToken.status).toBe(403)
        const foreign = yield* post({ revision: "1", name: "forged", csrf }, { origin: "https://attacker.example" })
        expect(foreign.status).toBe(403)
        expect(foreign.text).toContain("not sent from the console")
        const crossSite = yield* post({ revision: "1", name: "forged", csrf }, { "sec-fetch-site": "cross-site" })
        expect(crossSite.status).toBe(403)
        const noOrigin = yield* post({ revision: "1", name: "forged", csrf }, {})
        expect(noOrigin.status).toBe(403)
        expect(testRecord).toEqual({ name: "first", revision: 1 })
        expect(logs.events("console.csrf_refused").map((event) => event["reason"])).toEqual([
          "token",
          "token",
          "origin",
          "origin",
          "origin"
        ])
        // Hostile bodies: a control character, another content type.
        const control = yield* post({ revision: "1", name: "a\u0001b", csrf }, sameOrigin)
        expect(control.status).toBe(400)
        const json = yield* promise(() =>
          context.request.post(`${gateway.adminUrl}/console/test-record`, {
            data: { csrf },
            headers: { ...sameOrigin, "content-type": "application/json" }
          })
        )
        expect(json.status()).toBe(415)

        // Someone else saves first: the form still carries revision 1.
        testRecord.revision = 2
        testRecord.name = "changed elsewhere"
        yield* promise(() => page.fill("#name", "mine"))
        const [stale] = yield* promise(() =>
          Promise.all([
            page.waitForResponse(`${gateway.adminUrl}/console/test-record`),
            page.click("button:text('Save')")
          ])
        )
        expect(stale.status()).toBe(412)
        expect(yield* promise(() => page.textContent("h1"))).toBe("The record changed")
        expect(testRecord.name).toBe("changed elsewhere")
        yield* promise(() => page.click("text=Reload the form"))
        expect(yield* promise(() => page.inputValue("#name"))).toBe("changed elsewhere")
        yield* promise(() => page.fill("#name", "mine"))
        yield* promise(() =>
          Promise.all([page.waitForURL(`${gateway.adminUrl}/console/test-record`), page.click("button:text('Save')")])
        )
        expect(yield* promise(() => page.textContent("[role=status]"))).toBe("Saved.")
        expect(testRecord).toEqual({ name: "mine", revision: 3 })
        // The notice is shown once.
        yield* promise(() => page.reload())
        expect(yield* promise(() => page.$("[role=status]"))).toBeNull()

        const unknown = yield* promise(() => page.goto(`${gateway.adminUrl}/console/no-such-page`))
        expect(unknown?.status()).toBe(404)
        const put = yield* promise(() => context.request.put(`${gateway.adminUrl}/console/test-record`))
        expect(put.status()).toBe(405)

        // An access token about to expire is renewed in-process: the refresh token rotates, the page answers.
        const cookies = yield* promise(() => context.cookies(`${gateway.adminUrl}/console`))
        const value = cookies.find((cookie) => cookie.name === "gateway_console")?.value
        const session = yield* inGateway(gateway)(Effect.flatMap(ConsoleSessions, (sessions) => sessions.find(value)))
        expect(session).toBeDefined()
        const before = { access: session!.accessToken, refresh: session!.refreshToken }
        expect(before.refresh).toEqual(expect.any(String))
        session!.accessExpiresAt = 0
        const renewed = yield* promise(() => page.goto(`${gateway.adminUrl}/console`))
        expect(renewed?.status()).toBe(200)
        expect(session!.accessToken).not.toBe(before.access)
        expect(session!.refreshToken).toEqual(expect.any(String))
        expect(session!.refreshToken).not.toBe(before.refresh)
        expect(session!.accessExpiresAt).toBeGreaterThan(Date.now() + 60_000)

        yield* promise(() =>
          Promise.all([page.waitForURL(`${gateway.adminUrl}/console/sign-out`), page.click("button:text('Sign out')")])
        )
        expect(yield* promise(() => page.textContent("h1"))).toBe("Signed out")
        expect(logs.events("console.signed_out")).toHaveLength(1)
        expect(logs.events("auth.session_revoked")).toMatchObject([{ reason: "signed_out" }])
        yield* promise(() => page.goto(`${gateway.adminUrl}/console`))
        expect(yield* promise(() => page.title())).toBe("Sign in")
        expect(problems).toEqual({ csp: [], dialogs: [], errors: [] })
      })
  )
})
