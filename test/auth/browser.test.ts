/**
 * The sign-in pages (GET /sso) and `gateway init-admin` (docs/authorization-server.md): a real browser —
 * Debian Chromium driven by playwright-core — signs in as the local administrator through the actual pages,
 * enrolling TOTP the first time and using it the second, under the pages' real CSP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { renderSVG } from "uqr"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { callbackServer, launchChromium } from "../support/browser.js"
import { codeFlowPath, exchange } from "../support/oauth-client.js"
import { ADMIN_PASSWORD, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

describe("a real browser signs in as the local administrator", () => {
  it.scopedLive("Chromium: password, TOTP enrollment, code at the client; then password and TOTP again", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const callback = yield* callbackServer
      const chromium = yield* Effect.acquireRelease(promise(launchChromium), (browser) =>
        promise(() => browser.close())
      )
      const cspViolations: Array<string> = []
      const signInOnce = (enroll: boolean, secret: Uint8Array | undefined) =>
        promise(async () => {
          const context = await chromium.newContext()
          const page = await context.newPage()
          page.on("console", (message) => {
            if (message.text().includes("Content Security Policy")) cspViolations.push(message.text())
          })
          const redirectUri = `http://127.0.0.1:${callback.port}/callback`
          const { path, verifier } = codeFlowPath(redirectUri, { scope: "offline_access", state: "browser-state" })
          await page.goto(gateway.baseUrl + path)
          expect(await page.title()).toBe("Sign in")
          await page.fill("#username", "admin")
          await page.fill("#password", ADMIN_PASSWORD)
          await page.click("button[type=submit]")
          let key = secret
          if (enroll) {
            await page.waitForSelector("#totp-secret")
            key = base32Decode((await page.textContent("#totp-secret")) ?? "")
            // The QR code is drawn (inline SVG, allowed by the CSP) and encodes the otpauth address shown.
            const uri = (await page.textContent("#totp-uri")) ?? ""
            expect(uri).toMatch(/^otpauth:\/\/totp\//)
            const modules = /<path[^>]* d="([^"]+)"/.exec(renderSVG(uri, { border: 2 }))?.[1]
            expect(await page.$eval("#totp-qr svg path", (path) => path.getAttribute("d"))).toBe(modules)
            const box = await (await page.$("#totp-qr svg"))?.boundingBox()
            expect(box?.width).toBeGreaterThan(150)
          } else {
            await page.waitForSelector("form[action='/sso/mfa']")
          }
          // The next time step: a code is accepted once, and the first sign-in may have used this step's.
          await page.fill("#code", totpAt(key ?? new Uint8Array(), Date.now() + (enroll ? 0 : 30_000)))
          await Promise.all([page.waitForURL(`${redirectUri}?**`), page.click("button[type=submit]")])
          const landed = new URL(page.url())
          expect(landed.searchParams.get("state")).toBe("browser-state")
          expect(landed.searchParams.get("iss")).toBe(gateway.issuer)
          const tokens = await exchange(gateway.baseUrl, {
            code: landed.searchParams.get("code") ?? "",
            verifier,
            redirectUri,
            clientId: "cli",
            callback: landed.searchParams
          })
          expect(tokens.response.status).toBe(200)
          expect(tokens.body["refresh_token"]).toEqual(expect.any(String))
          // Signed in: the grants portal opens in the same browser.
          await page.goto(`${gateway.baseUrl}/sso/grants`)
          expect(await page.textContent("h1")).toBe("Applications you allowed")
          await context.close()
          return key
        })
      const secret = yield* signInOnce(true, undefined)
      expect(secret?.length).toBe(20)
      yield* signInOnce(false, secret)
      expect(callback.received.filter((url) => url.pathname === "/callback")).toHaveLength(2)
      expect(cspViolations).toEqual([])
    })
  )
})
