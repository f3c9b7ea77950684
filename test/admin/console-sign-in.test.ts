/**
 * The console's sign-in and its refusals over plain HTTP (docs/console.md, "Signing in", "Forms and
 * CSRF"): the console is off without admin.client_id; in local mode with it, /console starts an
 * authorization code request with PKCE S256, state, the admin resource and prompt=login; the callback
 * refuses a browser that did not start the sign-in, a wrong state, a wrong issuer, a bad code.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { consoleClient } from "../support/console.js"
import { LogCapture } from "../support/logs.js"
import { adminClient, defaultClients, type OAuthGateway, oauthGateway } from "../support/oauth-gateway.js"

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers, redirect: "manual" })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const localConsole = (logs: LogCapture) =>
  oauthGateway({
    logs,
    auth: (origin, adminUrl) => ({
      sso: { clients: [...defaultClients(origin, adminUrl), adminClient(adminUrl), consoleClient(adminUrl)] }
    }),
    admin: () => ({ client_id: "console" })
  })

/** Starts a sign-in: the sign-in cookie (name=value) and the authorization request's parameters. */
const start = (gateway: OAuthGateway) =>
  Effect.map(get(`${gateway.adminUrl}/console/identities?page=2`), (answer) => {
    const location = new URL(answer.headers.get("location") ?? "")
    const cookie = (answer.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    return { answer, location, cookie, state: location.searchParams.get("state") ?? "" }
  })

describe("the console's sign-in", () => {
  it.scoped("is off without admin.client_id: 404 saying how to turn it on", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const answer = yield* get(`${gateway.adminUrl}/console`)
      expect(answer.status).toBe(404)
      expect(answer.text).toContain("The console is off: set admin.client_id")
      expect(answer.headers.get("content-security-policy")).toContain("default-src 'none'")
    })
  )

  it.scoped("local mode: /console starts a code flow with PKCE, state, the admin resource and prompt=login", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const gateway = yield* localConsole(logs)
      const { answer, location, cookie } = yield* start(gateway)
      expect(answer.status).toBe(303)
      expect(`${location.origin}${location.pathname}`).toBe(`${gateway.issuer}/authorize`)
      expect(Object.fromEntries(location.searchParams)).toMatchObject({
        response_type: "code",
        client_id: "console",
        redirect_uri: `${gateway.adminUrl}/console/callback`,
        code_challenge_method: "S256",
        scope: "gateway:admin offline_access",
        resource: gateway.adminUrl,
        prompt: "login"
      })
      expect(location.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(location.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const setCookie = answer.headers.get("set-cookie") ?? ""
      // The sign-in itself, sealed (docs/console.md, "Sessions"): neither its state nor its return path readable.
      expect(cookie).toMatch(/^gateway_console_sign_in=v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
      expect(cookie).not.toContain(location.searchParams.get("state"))
      expect(setCookie).toContain("Path=/console/callback")
      expect(setCookie).toContain("HttpOnly")
      expect(setCookie).toContain("Secure")
      expect(setCookie).toContain("SameSite=Lax")
    })
  )

  it.scoped("the callback refuses an unknown sign-in, a wrong state, a wrong issuer and a bad code (400)", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const gateway = yield* localConsole(logs)
      const callback = `${gateway.adminUrl}/console/callback`
      const iss = encodeURIComponent(gateway.issuer)

      const none = yield* get(`${callback}?code=c&state=s&iss=${iss}`)
      expect(none.status).toBe(400)
      const wrongState = yield* start(gateway)
      expect((yield* get(`${callback}?code=c&state=nope&iss=${iss}`, { cookie: wrongState.cookie })).status).toBe(400)
      // Spent: the right state afterwards finds no sign-in.
      const spent = yield* get(`${callback}?code=c&state=${wrongState.state}&iss=${iss}`, { cookie: wrongState.cookie })
      expect(spent.status).toBe(400)
      const wrongIssuer = yield* start(gateway)
      const otherIssuer = encodeURIComponent("https://elsewhere.example/sso")
      const issued = yield* get(`${callback}?code=c&state=${wrongIssuer.state}&iss=${otherIssuer}`, {
        cookie: wrongIssuer.cookie
      })
      expect(issued.status).toBe(400)
      const badCode = yield* start(gateway)
      const code = yield* get(`${callback}?code=forged&state=${badCode.state}&iss=${iss}`, { cookie: badCode.cookie })
      expect(code.status).toBe(400)
      expect(code.text).toContain("The authorization code is invalid or expired.")
      expect(code.headers.get("set-cookie")).toContain("gateway_console_sign_in=;")
      expect(logs.events("console.sign_in_refused").map((event) => event["reason"])).toEqual([
        "no_sign_in",
        "state_mismatch",
        "no_sign_in",
        "issuer_mismatch",
        "code_refused"
      ])
      expect(logs.events("console.signed_in")).toEqual([])
    })
  )

  it.scoped(
    "without a session a POST is 401, from another origin 403; other methods 405; the API is still the API's",
    () =>
      Effect.gen(function* () {
        const gateway = yield* localConsole(new LogCapture())
        const post = (headers: Record<string, string>) =>
          Effect.promise(() =>
            fetch(`${gateway.adminUrl}/console`, {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
              body: "csrf=x",
              redirect: "manual"
            }).then((response) => response.status)
          )
        expect(yield* post({ origin: gateway.adminUrl })).toBe(401)
        expect(yield* post({ origin: "https://attacker.example" })).toBe(403)
        const put = yield* Effect.promise(() => fetch(`${gateway.adminUrl}/console`, { method: "PUT" }))
        expect(put.status).toBe(405)
        expect(put.headers.get("allow")).toBe("GET, POST")
        expect((yield* get(`${gateway.adminUrl}/console/%01`)).status).toBe(400)
        const api = yield* get(`${gateway.adminUrl}/api/v1/status`)
        expect(api.status).toBe(401)
        expect(api.headers.get("content-type")).toContain("application/json")
        expect((yield* get(`${gateway.adminUrl}/consoles`)).headers.get("content-type")).not.toContain("text/html")
      })
  )
})
