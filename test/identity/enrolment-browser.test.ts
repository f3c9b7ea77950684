/**
 * docs/local-accounts.md in a real browser (Chromium through playwright-core): an administrator creates a
 * local account; the person opens the enrolment link, sets a password (twice) and adds the offered TOTP
 * secret, confirming a code, under the /sso pages' CSP; the link then refuses a second use; the person
 * signs in through /sso with password and code and the client gets a token.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { adminToken, managementApi } from "../support/admin-api.js"
import { callbackServer, launchChromium, watchedBrowsers } from "../support/browser.js"
import { codeFlowPath, exchange } from "../support/oauth-client.js"
import { oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const PASSWORD = "a person's own long password"

describe("a person enrols through their link in a real browser", () => {
  it.scopedLive(
    "Chromium: password twice, TOTP with a code, the account ready; the link is single use; sign-in gets a token",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway()
        const callback = yield* callbackServer
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const created = yield* api.post("/api/v1/local-accounts", { username: "lena", display_name: "Lena" })
        expect(created.status).toBe(201)
        const link = created.body["enrolment_url"] as string
        const chromium = yield* Effect.acquireRelease(promise(launchChromium), (browser) =>
          promise(() => browser.close())
        )
        const browsers = watchedBrowsers(chromium)

        const secret = yield* promise(async () => {
          const { context, page } = await browsers.open()
          // What the browser sends with the form's posts: the origin alone as Referer, so the link's token
          // is in no proxy's log.
          const postReferers: Array<string | undefined> = []
          page.on("request", (request) => {
            if (request.method() === "POST") postReferers.push(request.headers()["referer"])
          })
          const opened = await page.goto(link)
          expect(opened?.status()).toBe(200)
          expect(opened?.headers()["referrer-policy"]).toBe("strict-origin")
          expect(await page.getAttribute('meta[name="referrer"]', "content")).toBe("strict-origin")
          expect(await page.title()).toBe("Set up your account")
          expect(await page.textContent("#enrol-username")).toBe("lena")
          const key = base32Decode((await page.textContent("#totp-secret")) ?? "")
          expect(key?.length).toBe(20)
          // Two different passwords: the same form again, with the same secret to add.
          await page.fill("#password", PASSWORD)
          await page.fill("#password-again", `${PASSWORD}!`)
          await page.fill("#code", totpAt(key!, Date.now()))
          await page.click("button[type=submit]")
          expect(await page.textContent("p.error")).toContain("The two passwords differ")
          expect(base32Decode((await page.textContent("#totp-secret")) ?? "")).toEqual(key)
          // The form's address carries no token.
          expect(new URL(page.url()).search).toBe("")
          await page.fill("#password", PASSWORD)
          await page.fill("#password-again", PASSWORD)
          await page.fill("#code", totpAt(key!, Date.now()))
          await page.click("button[type=submit]")
          expect(await page.textContent("h1")).toBe("Your account is ready")
          expect(postReferers).toEqual([`${gateway.baseUrl}/`, `${gateway.baseUrl}/`])
          await context.close()
          return key!
        })

        // The same link again, in another browser: refused.
        yield* promise(async () => {
          const { context, page } = await browsers.open()
          const again = await page.goto(link)
          expect(again?.status()).toBe(410)
          expect(await page.textContent("body")).toContain("does not work any more")
          await context.close()
        })

        // The person signs in through /sso: password, then the next step's code (the enrolment used this one).
        yield* promise(async () => {
          const { context, page } = await browsers.open()
          const redirectUri = `http://127.0.0.1:${callback.port}/callback`
          const { path, verifier } = codeFlowPath(redirectUri, { scope: "offline_access", state: "enrolled" })
          await page.goto(gateway.baseUrl + path)
          await page.fill("#username", "lena")
          await page.fill("#password", PASSWORD)
          await page.click("button[type=submit]")
          await page.waitForSelector("form[action='/sso/mfa']")
          await page.fill("#code", totpAt(secret, Date.now() + 30_000))
          await Promise.all([page.waitForURL(`${redirectUri}?**`), page.click("button[type=submit]")])
          const landed = new URL(page.url())
          const tokens = await exchange(gateway.baseUrl, {
            code: landed.searchParams.get("code") ?? "",
            verifier,
            redirectUri,
            clientId: "cli",
            callback: landed.searchParams
          })
          expect(tokens.response.status).toBe(200)
          expect(tokens.body["access_token"]).toEqual(expect.any(String))
          await context.close()
        })
        expect(browsers.problems).toEqual({ csp: [], dialogs: [], errors: [] })
      })
  )
})
