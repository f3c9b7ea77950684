/**
 * docs/local-accounts.md, "The page": `POST /sso/enrol` checks origin and its anti-CSRF token (bound to
 * the browser and the link), counts wrong codes against the account like a sign-in (429 with
 * Retry-After), counts posts of dead links per address, keeps the offered secret across a mistyped
 * password, and never writes the link's token to the log.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { totpAt } from "../../src/identity/local/totp.js"
import { adminToken, managementApi } from "../support/admin-api.js"
import { LogCapture } from "../support/logs.js"
import { Browser, enrollmentSecret, formFields } from "../support/oauth-client.js"
import { oauthGateway } from "../support/oauth-gateway.js"

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
        expect(page.headers.get("referrer-policy")).toBe("no-referrer")
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
    })
  )
})
