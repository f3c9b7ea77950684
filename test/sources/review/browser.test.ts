/**
 * docs/tool-sources.md, "Configuration review", in a real browser: Debian Chromium driven by
 * playwright-core. An administrator's proposal waits; a second person, a security reviewer, follows
 * the proposal's approval_url (`/auth/login?role=security&proposal=…`) signed out, signs in through
 * the actual /sso pages (password, TOTP enrolment), lands on the proposal, reads its diff and presses
 * Approve — under the pages' CSP. The proposer, a security reviewer too, is offered no button; a post
 * from another origin counts for nothing. `ConfigChanges` is the test stand-in over state in memory
 * (test/support/config-changes.ts) until the live service is merged.
 */
import { createServer, type Server } from "node:http"
import { Effect, Exit, Scope } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base32Decode, totpAt } from "../../../src/identity/local/totp.js"
import { addLocalUser } from "../../support/admin-api.js"
import { launchChromium, watchedBrowsers } from "../../support/browser.js"
import type { TestChanges } from "../../support/config-changes.js"
import { reviewGateway } from "../../support/config-review.js"
import { grantAccessTo } from "../../support/grants.js"
import { LogCapture } from "../../support/logs.js"
import { inGateway, type OAuthGateway } from "../../support/oauth-gateway.js"

const PASSWORD = "a reviewer's long passphrase"
const MARKUP = "<img src=x onerror=alert(1)>"

const scope = Effect.runSync(Scope.make())
const logs = new LogCapture()
let gateway: OAuthGateway
let changes: TestChanges
let chromium: Browser
let browsers: ReturnType<typeof watchedBrowsers>
let elsewhere: Server
let elsewherePage = ""

beforeAll(async () => {
  ;({ gateway, changes } = await Effect.runPromise(Scope.extend(reviewGateway({ logs }), scope)))
  chromium = await launchChromium()
  browsers = watchedBrowsers(chromium)
  elsewhere = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(elsewherePage)
  })
  await new Promise<void>((done) => elsewhere.listen(0, "127.0.0.1", done))
})
afterAll(async () => {
  await chromium?.close()
  elsewhere?.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const elsewhereOrigin = () => {
  const address = elsewhere.address()
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
}

/** A local account with a password in a permission group with `roles`. */
const account = (username: string, roles: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const userId = yield* addLocalUser(gateway, username, PASSWORD)
      yield* inGateway(gateway)(grantAccessTo(userId, [], { roles }))
      return { userId, username }
    })
  )

/** Follows the approval link signed out: the /sso sign-in (password, TOTP enrolment), then the proposal. */
const signInVia = async (page: Page, approvalUrl: string, proposalUrl: string, who: { username: string }) => {
  const first = await page.goto(approvalUrl)
  expect(first?.status()).toBe(200)
  const signIn = new URL(page.url())
  expect(signIn.pathname).toBe("/sso")
  expect(signIn.searchParams.getAll("next")).toEqual([new URL(proposalUrl).pathname])
  await page.fill("#username", who.username)
  await page.fill("#password", PASSWORD)
  await page.click("button[type=submit]")
  await page.waitForSelector("#totp-secret")
  const secret = base32Decode((await page.textContent("#totp-secret")) ?? "")
  await page.fill("#code", totpAt(secret ?? new Uint8Array(), Date.now()))
  await Promise.all([page.waitForURL(proposalUrl), page.click("button[type=submit]")])
}

const text = async (page: Page, selector: string) => ((await page.textContent(selector)) ?? "").trim()

describe("a real browser (Chromium + playwright-core) reviewing a configuration change", () => {
  it("a second person signs in at /auth/login?role=security and approves; the proposer cannot; a cross-origin post counts for nothing", async () => {
    const proposer = await account("ada-admin", ["admin", "security_reviewer"])
    const reviewer = await account("sam-security", ["security_reviewer"])
    const id = changes.propose({
      proposer: { user_id: proposer.userId, name: "ada-admin" },
      kind: "backend",
      target_id: "notes",
      action: "create",
      diff: [
        { path: "/url", before: undefined, after: "https://notes.internal.example/mcp" },
        { path: "/description", before: undefined, after: MARKUP },
        { path: "/headers/authorization", before: undefined, after: { configured: true } }
      ]
    })
    // What the Management API hands out (src/sources/review-url.ts): the origin of server.public_url.
    const approvalUrl = `${new URL(gateway.mcpUrl).origin}/auth/login?role=security&proposal=${id}`
    const proposalUrl = `${gateway.baseUrl}/auth/reviews/${id}`

    // The proposer, a security reviewer too, is offered no decision on their own proposal.
    const own = await browsers.open()
    await signInVia(own.page, approvalUrl, proposalUrl, proposer)
    expect(await own.page.locator("#approve").count()).toBe(0)
    expect(await own.page.locator("#reject").count()).toBe(0)
    expect(await text(own.page, "#blocked")).toBe("You proposed this change: another security reviewer must decide it.")

    // The second person follows the same link, signs in for real and lands on the proposal.
    const second = await browsers.open()
    await signInVia(second.page, approvalUrl, proposalUrl, reviewer)
    const shown = await second.page.reload()
    expect(shown?.headers()["content-security-policy"]).toContain("default-src 'none'")
    expect(await second.page.title()).toBe(`Configuration change ${id}`)
    expect(await text(second.page, "#subject")).toBe("Create Backend notes")
    expect(await text(second.page, "#proposer")).toBe(`ada-admin (${proposer.userId})`)
    expect(await second.page.getAttribute("#state [data-state]", "data-state")).toBe("pending_approval")
    // The diff is text: the markup in it is not an element; the secret is only "configured".
    expect(await second.page.locator("#diff tbody tr").count()).toBe(3)
    expect(await text(second.page, "#diff tbody tr:nth-child(2) td:nth-child(3)")).toBe(JSON.stringify(MARKUP))
    expect(await second.page.locator("#diff img").count()).toBe(0)
    expect(await text(second.page, "#diff tbody tr:nth-child(3) td:nth-child(3)")).toContain('"configured": true')
    // Landmarks and names a screen reader announces.
    expect(await second.page.getByRole("main").count()).toBe(1)
    expect(await second.page.getByRole("button", { name: "Approve and apply" }).count()).toBe(1)
    expect(await second.page.getByRole("button", { name: "Reject" }).count()).toBe(1)

    // A page on another origin posts the reviewer's approve form with the right token: refused.
    const csrf = (await second.page.getAttribute(`form[action$='/approve'] input[name=csrf]`, "value")) ?? ""
    const approveUrl = `${proposalUrl}/approve`
    elsewherePage = `<!doctype html><title>elsewhere</title><form method="post" action="${approveUrl}"><input type="hidden" name="csrf" value="${csrf}"><button id="go">Continue</button></form>`
    const lure = await second.context.newPage()
    await lure.goto(`${elsewhereOrigin()}/`)
    const [crossOrigin] = await Promise.all([
      lure.waitForResponse((response) => response.url() === approveUrl && response.request().method() === "POST"),
      lure.click("#go")
    ])
    expect(crossOrigin.status()).toBe(403)
    await lure.close()
    expect(changes.calls).toEqual([])
    expect(logs.events("config.review_refused").map((line) => line["reason"])).toEqual(["foreign_origin"])

    // The reviewer presses Approve: the change is applied and the page says so.
    await Promise.all([second.page.waitForURL(`${proposalUrl}?done=approve`), second.page.click("#approve")])
    expect(await text(second.page, "#notice")).toBe("You approved this change.")
    expect(await text(second.page, "#outcome")).toBe("Applied: the change is active.")
    expect(await second.page.getAttribute("#state [data-state]", "data-state")).toBe("applied")
    expect(await second.page.locator("#approve").count()).toBe(0)
    expect(changes.applied).toEqual([id])
    expect(changes.calls).toEqual([
      { action: "approve", id, reviewer: { user_id: reviewer.userId, name: reviewer.username } }
    ])

    for (const each of [own, second]) await each.context.close()
    expect(browsers.problems).toEqual({ csp: [], dialogs: [], errors: [] })
    // Two real sign-ins (password hashing, TOTP enrolment) in Chromium beside another test worker on
    // two cores: a step that hangs still fails after STEP_TIMEOUT_MS, naming itself.
  }, 60_000)
})
