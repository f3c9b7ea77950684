/**
 * docs/authorization-server.md, "Sign-in": the sign-in pages over real HTTP —
 * headers, CSRF, failed-login throttling per account and per address, TOTP replay, browser sessions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import { totpAt } from "../../src/identity/local/totp.js"
import { UserRepo } from "../../src/store/users.js"
import {
  authorizePath,
  Browser,
  callbackParams,
  formFields,
  obtainCode,
  pkcePair,
  signIn,
  startAuthorization
} from "../support/oauth-client.js"
import { defaultClients, inGateway, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const authorizeFor = (browser: Browser, extra: Record<string, string> = {}) =>
  promise(() => startAuthorization(browser, extra))

const loginPage = (browser: Browser) =>
  Effect.flatMap(authorizeFor(browser), (start) => promise(() => browser.follow(start))).pipe(
    Effect.flatMap((page) => promise(() => page.text()))
  )

describe("the sign-in pages", () => {
  it.scoped("GET /sso lists the sign-in methods with a strict CSP, no caching and escaped text", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({
        auth: (origin, adminUrl) => ({
          sso: {
            clients: [
              ...defaultClients(origin, adminUrl),
              {
                id: `x"><script>alert(1)</script>`,
                redirect_uris: ["http://127.0.0.1/x"],
                resources: [`${origin}/mcp`]
              }
            ]
          }
        })
      })
      const browser = new Browser(gateway.baseUrl)
      const page = yield* promise(() => browser.get("/sso"))
      expect(page.status).toBe(200)
      const csp = page.headers.get("content-security-policy") ?? ""
      expect(csp).toContain("default-src 'none'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).toContain("form-action 'self'")
      expect(csp).not.toContain("script-src")
      expect(page.headers.get("cache-control")).toBe("no-store")
      expect(page.headers.get("x-frame-options")).toBe("DENY")
      expect(page.headers.get("referrer-policy")).toBe("same-origin")
      const html = yield* promise(() => page.text())
      expect(html).toContain("Local account")
      expect(html).not.toContain("<script")
      expect(formFields(html, "/sso/login/local")).toEqual({ login: expect.any(String), csrf: expect.any(String) })

      const start = yield* promise(() =>
        browser.get(
          authorizePath({
            client_id: `x"><script>alert(1)</script>`,
            redirect_uri: "http://127.0.0.1:4000/x",
            response_type: "code",
            code_challenge: pkcePair().challenge,
            code_challenge_method: "S256"
          })
        )
      )
      const tx = yield* promise(() => browser.follow(start))
      const text = yield* promise(() => tx.text())
      expect(text).toContain("x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;")
      expect(text).not.toContain("<script>")
      expect(tx.headers.get("content-security-policy")).toContain("form-action 'self' http://127.0.0.1:4000")
    })
  )

  it.scoped("refuses form posts without the right CSRF token, from another origin or another browser", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const fields = formFields(yield* loginPage(browser), "/sso/login/local")
      const good = { ...fields, username: "admin", password: "wrong password" }
      const attempts: ReadonlyArray<readonly [Browser, Record<string, string>, Record<string, string>, number]> = [
        [browser, { ...good, csrf: "forged" }, {}, 403],
        [browser, { login: fields["login"] ?? "", username: "admin", password: "x" }, {}, 403],
        [browser, good, { origin: "https://evil.example" }, 403],
        [browser, good, { origin: "null" }, 403],
        [browser, good, { "sec-fetch-site": "cross-site" }, 403],
        [new Browser(gateway.baseUrl), good, {}, 400]
      ]
      for (const [who, form, headers, status] of attempts) {
        const response = yield* promise(() => who.post("/sso/login/local", form, headers))
        expect([headers, response.status]).toEqual([headers, status])
      }
      const repeated = yield* promise(() =>
        fetch(`${gateway.baseUrl}/sso/login/local`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join("; ")
          },
          body: `${new URLSearchParams(good).toString()}&login=again`
        })
      )
      expect(repeated.status).toBe(400)
      // The right token from this origin is accepted (and the password checked).
      const checked = yield* promise(() =>
        browser.post("/sso/login/local", good, { origin: gateway.baseUrl, "sec-fetch-site": "same-origin" })
      )
      expect(checked.status).toBe(401)
      expect(yield* promise(() => checked.text())).toContain("Wrong user name or password.")
    })
  )

  it.scoped("throttles failed sign-ins: 5 per account, 20 per address, for 15 minutes", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const fields = formFields(yield* loginPage(browser), "/sso/login/local")
      const attempt = (username: string, password: string) =>
        promise(() => browser.post("/sso/login/local", { ...fields, username, password }))
      for (let index = 0; index < 5; index++) expect((yield* attempt("admin", "wrong password")).status).toBe(401)
      const locked = yield* attempt("admin", "correct horse battery staple")
      expect(locked.status).toBe(429)
      expect(Number(locked.headers.get("retry-after"))).toBe(900)
      // Unknown accounts fail exactly like wrong passwords, and fill the address's budget.
      for (let index = 0; index < 15; index++) expect((yield* attempt(`nobody${index}`, "x")).status).toBe(401)
      expect((yield* attempt("somebody-else", "x")).status).toBe(429)

      yield* TestClock.adjust("900 seconds")
      const page = yield* promise(() => browser.get(`/sso?login=${fields["login"]}`))
      expect(page.status).toBe(400)
      const restart = yield* authorizeFor(browser)
      const again = yield* promise(() => browser.follow(restart))
      const done = yield* promise(() => signIn(browser, again, { totp: {}, nowMs: 900_000 }))
      expect(done.status).toBe(303)
      expect(callbackParams(done).get("code")).toEqual(expect.any(String))
    })
  )

  it.scoped("a wrong or replayed TOTP code is refused and counts as a failure", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const totp: { secret?: Uint8Array } = {}
      yield* promise(() => obtainCode(new Browser(gateway.baseUrl), { totp, nowMs: 0 }))
      const secret = totp.secret!
      // Enrollment used the code of step 0: the same code does not sign in again.
      const browser = new Browser(gateway.baseUrl)
      const fields = formFields(yield* loginPage(browser), "/sso/login/local")
      const password = yield* promise(async () =>
        browser.follow(
          await browser.post("/sso/login/local", {
            ...fields,
            username: "admin",
            password: "correct horse battery staple"
          })
        )
      )
      const mfa = formFields(yield* promise(() => password.text()), "/sso/mfa")
      const replay = yield* promise(() => browser.post("/sso/mfa", { ...mfa, code: totpAt(secret, 0) }))
      expect(replay.status).toBe(401)
      const wrong = yield* promise(() =>
        browser.post("/sso/mfa", { ...mfa, code: "000000" === totpAt(secret, 30_000) ? "111111" : "000000" })
      )
      expect(wrong.status).toBe(401)
      const next = yield* promise(() => browser.post("/sso/mfa", { ...mfa, code: totpAt(secret, 30_000) }))
      expect(next.status).toBe(303)
      expect(callbackParams(next).get("code")).toEqual(expect.any(String))
    })
  )

  it.scoped("a signed-in browser skips the sign-in page, unless prompt=login; GET /sso opens the portal", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      yield* promise(() => obtainCode(browser, { totp: {}, nowMs: 0 }))
      expect([...browser.cookies.keys()].sort()).toEqual(["gw_browser", "gw_session"])
      const direct = yield* authorizeFor(browser)
      expect(callbackParams(direct).get("code")).toEqual(expect.any(String))
      const forced = yield* authorizeFor(browser, { prompt: "login" })
      expect(forced.headers.get("location")).toMatch(/^\/sso\?login=/)
      const silent = yield* authorizeFor(browser, { prompt: "none" })
      expect(callbackParams(silent).get("code")).toEqual(expect.any(String))
      const portal = yield* promise(() => browser.get("/sso"))
      expect([portal.status, portal.headers.get("location")]).toEqual([303, "/sso/grants"])
      const grants = yield* promise(() => browser.get("/sso/grants"))
      expect(yield* promise(() => grants.text())).toContain("No application has access.")
      expect((yield* promise(() => new Browser(gateway.baseUrl).get("/sso/grants"))).headers.get("location")).toBe(
        "/sso"
      )
    })
  )

  it.scoped("a disabled account ends the login with access_denied, reason account_access_required", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const totp = {}
      const browser = new Browser(gateway.baseUrl)
      yield* promise(() => obtainCode(browser, { totp, nowMs: 0 }))
      const users = yield* inGateway(gateway)(UserRepo)
      const admin = Option.getOrThrow(yield* users.findBuiltinAdmin)
      yield* users.setStatus(admin.id, "disabled", new Date(yield* Clock.currentTimeMillis))
      // The browser session no longer counts, and a full sign-in ends in access_denied.
      const start = yield* authorizeFor(browser)
      const page = yield* promise(() => browser.follow(start))
      expect(page.status).toBe(200)
      yield* TestClock.adjust("30 seconds")
      const done = yield* promise(() => signIn(browser, page, { totp, nowMs: 30_000 }))
      const callback = callbackParams(done)
      expect(callback.get("error")).toBe("access_denied")
      expect(callback.get("reason")).toBe("account_access_required")
      expect(callback.get("code")).toBeNull()
    })
  )
})
