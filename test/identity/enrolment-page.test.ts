/**
 * docs/local-accounts.md, "The page": `POST /sso/enrol` checks origin and its anti-CSRF token (bound to
 * the browser and the link), counts wrong codes against the account like a sign-in (429 with
 * Retry-After), counts posts of dead links per address, keeps the offered secret across a mistyped
 * password, and never writes the link's token to the log.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { accessFields } from "../../src/http/request-context.js"
import { totpAt } from "../../src/identity/local/totp.js"
import { adminToken, managementApi } from "../support/admin-api.js"
import { enrolThroughLink } from "../support/enrolment.js"
import { LogCapture } from "../support/logs.js"
import { Browser, enrollmentSecret, formFields } from "../support/oauth-client.js"
import { oauthGateway } from "../support/oauth-gateway.js"
import { startOtlpReceiver } from "../support/otlp-receiver.js"

const PASSWORD = "a long enough password"

describe("the enrolment page", () => {
  it.scoped("refuses foreign and CSRF-less posts, throttles wrong codes and dead links, and logs no token", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      const gateway = yield* oauthGateway({ logs })
      const api = managementApi(gateway, yield* adminToken(gateway))
      const created = yield* api.post("/api/v1/local-accounts", { username: "mona", display_name: "Mona" })
      const link = new URL(created.body["enrolment_url"] as string)
      const token = link.searchParams.get("token")!

      yield* Effect.promise(async () => {
        const browser = new Browser(gateway.baseUrl)
        const page = await browser.get(`${link.pathname}${link.search}`)
        expect(page.headers.get("referrer-policy")).toBe("strict-origin")
        expect(page.headers.get("content-security-policy")).toContain("default-src 'none'")
        const html = await page.text()
        const fields = formFields(html, "/sso/enrol")
        const secret = enrollmentSecret(html)
        const post = (extra: Record<string, string>, headers: Record<string, string> = { origin: gateway.baseUrl }) =>
          browser.post("/sso/enrol", { ...fields, password: PASSWORD, password_again: PASSWORD, ...extra }, headers)

        expect((await post({ code: totpAt(secret, 0) }, { origin: "https://evil.example" })).status).toBe(403)
        expect((await post({ code: totpAt(secret, 0), csrf: "forged" })).status).toBe(403)
        const other = new Browser(gateway.baseUrl)
        const foreignBrowser = await other.post(
          "/sso/enrol",
          { ...fields, password: PASSWORD, password_again: PASSWORD, code: totpAt(secret, 0) },
          { origin: gateway.baseUrl }
        )
        expect(foreignBrowser.status).toBe(403)

        // Mistyped passwords are not guesses: the same secret is offered again, nothing counted.
        for (let attempt = 0; attempt < 6; attempt++) {
          const short = await post({ password: "short", password_again: "short", code: totpAt(secret, 0) })
          expect(short.status).toBe(400)
          expect(enrollmentSecret(await short.text())).toEqual(secret)
        }
        // Wrong codes are: five, then 429 with Retry-After, the correct code included.
        for (let attempt = 0; attempt < 5; attempt++) {
          expect((await post({ code: totpAt(secret, 10 * 60_000) })).status).toBe(401)
        }
        const throttled = await post({ code: totpAt(secret, 0) })
        expect(throttled.status).toBe(429)
        expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0)

        // Posts of dead links count per address.
        const statuses: Array<number> = []
        for (let attempt = 0; attempt < 6; attempt++) {
          statuses.push((await post({ token: "A".repeat(43), code: "000000" })).status)
        }
        expect(statuses.slice(0, 5)).toEqual([410, 410, 410, 410, 410])
        expect(statuses[5]).toBe(429)
      })
      expect(logs.events("auth.enrolment_refused").map((entry) => entry["reason"])).toContain("wrong_code")
      expect(logs.events("auth.enrolment_refused").map((entry) => entry["reason"])).toContain("link_dead")
      expect(logs.text()).not.toContain(token)
      // Access lines (debug, and 5xx answers) carry the path without its query.
      const line = accessFields("GET", `${link.pathname}${link.search}`, 200, performance.now())
      expect(line.path).toBe("/sso/enrol")
      expect(JSON.stringify(line)).not.toContain(token)
    })
  )
})

describe("the enrolment link in traces", () => {
  it.scopedLive("no exported span holds the token: the request spans carry the route, not the query", () =>
    Effect.gen(function* () {
      const receiver = yield* Effect.acquireRelease(
        Effect.promise(() => startOtlpReceiver()),
        (started) => Effect.promise(() => started.stop())
      )
      const gateway = yield* oauthGateway({ patch: { observability: { otlp_endpoint: receiver.url } } })
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
      const created = yield* api.post("/api/v1/local-accounts", { username: "nina", display_name: "Nina" })
      const link = created.body["enrolment_url"] as string
      const token = new URL(link).searchParams.get("token")!
      const enrolled = yield* Effect.promise(() => enrolThroughLink(link, PASSWORD, Date.now()))
      expect(enrolled.status).toBe(200)
      const spans = yield* Effect.promise(() =>
        // The administrator's sign-in posts twice under /sso (password, TOTP enrolment); the enrolment's post is the third.
        receiver.waitFor((all) => all.filter((span) => span.name === "POST /sso").length >= 3)
      )
      expect(spans.filter((span) => span.name === "GET /sso").length).toBeGreaterThanOrEqual(3)
      expect(Buffer.concat(receiver.bodies()).toString("latin1")).not.toContain(token)
      const values = spans.flatMap((span) => [span.name, ...Object.values(span.attributes).map(String)])
      expect(values.some((value) => value.includes(token))).toBe(false)
    })
  )
})
