import type { Page } from "playwright-core"
import { consoleSections } from "../../src/admin/console/pages/index.js"
import { hasParameters } from "../../src/admin/console/router.js"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { adminClient, defaultClients, type OAuthGatewayOptions } from "./oauth-gateway.js"

/** The console's client (`admin.client_id`): its callback at the admin origin, the admin resource. */
export const consoleClient = (adminUrl: string) => ({
  id: "console",
  redirect_uris: [`${adminUrl}/console/callback`],
  resources: [adminUrl]
})

/**
 * A gateway in `admin.mode: remote` whose `admin.public_url` is the admin listener on loopback (what an
 * HTTPS proxy would answer at), with the console's client registered.
 */
export const remoteConsole = (options: OAuthGatewayOptions = {}): OAuthGatewayOptions => ({
  ...options,
  auth: (origin, adminUrl) => ({
    sso: { clients: [...defaultClients(origin, adminUrl), adminClient(adminUrl), consoleClient(adminUrl)] }
  }),
  admin: (adminUrl) => ({ mode: "remote", public_url: adminUrl, client_id: "console" })
})

/** TOTP secrets of the people signed in so far, by user name (enrolled on their first sign-in). */
export type TotpSecrets = Map<string, Uint8Array>

/**
 * Opens `/console` in `page` and signs in at the gateway's own pages as `username`: password, then TOTP
 * (enrolled the first time, its secret kept in `secrets`). Ends on the console page asked for.
 */
export const consoleSignIn = async (
  page: Page,
  adminUrl: string,
  username: string,
  password: string,
  secrets: TotpSecrets,
  path = "/console"
) => {
  await page.goto(adminUrl + path)
  // Plain checks, not vitest's: scripts/console-screenshots.ts signs in with this too.
  const title = await page.title()
  if (title !== "Sign in") throw new Error(`expected the sign-in page at ${path}, got "${title}"`)
  await page.fill("#username", username)
  await page.fill("#password", password)
  await page.click("button[type=submit]")
  const secret = secrets.get(username)
  if (secret === undefined) {
    await page.waitForSelector("#totp-secret")
    const enrolled = base32Decode((await page.textContent("#totp-secret")) ?? "") ?? new Uint8Array()
    secrets.set(username, enrolled)
    await page.fill("#code", totpAt(enrolled, Date.now()))
  } else {
    await page.waitForSelector("form[action='/sso/mfa']")
    // The next time step: a code is accepted once, and an earlier sign-in may have used this step's.
    await page.fill("#code", totpAt(secret, Date.now() + 30_000))
  }
  await Promise.all([page.waitForURL(`${adminUrl}${path}`), page.click("button[type=submit]")])
}

/** The value of the page's CSRF field (every console form carries it). */
export const csrfOf = async (page: Page) => (await page.getAttribute("input[name=csrf]", "value")) ?? ""

/** The overview, then every GET page of the sections registry a person can open without an id. */
export const consolePagePaths: ReadonlyArray<string> = [
  ...new Set([
    "/console",
    ...consoleSections.flatMap((section) =>
      section.routes.filter((route) => route.method === "GET" && !hasParameters(route)).map((route) => route.path)
    )
  ])
]
