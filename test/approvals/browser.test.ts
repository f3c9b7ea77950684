/**
 * docs/approvals.md, "Review page", in a real browser: Debian Chromium driven by playwright-core. A
 * requester's production deploy needs two reviewers; each reviewer opens the approval link signed out,
 * signs in through the actual /sso pages (local account, password, TOTP enrolment) and comes back to the
 * approval, reads it, and presses Approve — under the pages' real CSP. The requester, an approver too,
 * cannot approve their own request; a post from another origin counts for nothing; the approved write
 * runs once when the requester resumes it through MCP.
 */
import { createServer, type Server } from "node:http"
import { Clock, Effect, Option, Redacted } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hashPassword } from "../../src/identity/local/password.js"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { UserRepo } from "../../src/store/users.js"
import {
  approvalIdOf,
  deploy,
  type OpsBackend,
  person,
  resume,
  startApprovalGateway,
  startOps,
  statusOf
} from "../support/approvals.js"
import { launchChromium, watchedBrowsers } from "../support/browser.js"
import { LogCapture } from "../support/logs.js"
import type { TestGateway } from "../support/mcp-gateway.js"

const PASSWORD = "two keys turn the lock"
/** Markup in an argument: the review page must show it as text (and the CSP would refuse it anyway). */
const MARKUP = "<img src=x onerror=alert(1)>"
// Characters a browser draws as nothing: a combining grapheme joiner, variation selectors (one above
// U+FFFF), a Hangul filler. The page must show each as its JSON escape, and warn.
const INVISIBLE = "\u034f\ufe0f\u{e0100}\u3164"
const VERSION = `${MARKUP}${INVISIBLE}`

let ops: OpsBackend
let gateway: TestGateway
let chromium: Browser
let browsers: ReturnType<typeof watchedBrowsers>
let elsewhere: Server
const logs = new LogCapture()

/** Another origin on the same host (same site: the SameSite=Lax session cookie goes along with its posts). */
const elsewhereOrigin = () => {
  const address = elsewhere.address()
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
}
let elsewherePage = ""
/** PASSWORD's scrypt hash, made once: the accounts here share it (each sign-in still verifies it). */
let passwordHash = ""

beforeAll(async () => {
  ops = await startOps()
  gateway = await startApprovalGateway(ops, {}, { logs })
  passwordHash = await gateway.run(hashPassword(Redacted.make(PASSWORD)))
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
  await gateway?.close()
  await ops?.stop()
})

/** A local account with a password for an existing person, under a display name reviewers will see. */
const withPassword = (userId: string, displayName: string) =>
  gateway.run(
    Effect.gen(function* () {
      const users = yield* UserRepo
      const at = new Date(yield* Clock.currentTimeMillis)
      yield* users.setDisplayName(userId, displayName, at)
      yield* (yield* LocalCredentialRepo).setPassword(userId, passwordHash, at)
      const user = Option.getOrThrow(yield* users.findById(userId))
      return { userId, username: user.username ?? "", displayName }
    })
  )

type Account = Awaited<ReturnType<typeof withPassword>>

/**
 * Opens the approval link signed out: the review page sends the browser to the sign-in page, which —
 * after the password and TOTP enrolment — comes back to exactly this approval.
 */
const signInVia = async (page: Page, approvalUrl: string, account: Account) => {
  const first = await page.goto(approvalUrl)
  expect(first?.status()).toBe(200)
  const signIn = new URL(page.url())
  expect(signIn.pathname).toBe("/sso")
  expect(signIn.searchParams.getAll("next")).toEqual([new URL(approvalUrl).pathname])
  expect(await page.title()).toBe("Sign in")
  await page.fill("#username", account.username)
  await page.fill("#password", PASSWORD)
  await page.click("button[type=submit]")
  await page.waitForSelector("#totp-secret")
  const secret = base32Decode((await page.textContent("#totp-secret")) ?? "")
  await page.fill("#code", totpAt(secret ?? new Uint8Array(), Date.now()))
  await Promise.all([page.waitForURL(approvalUrl), page.click("button[type=submit]")])
}

const text = async (page: Page, selector: string) => ((await page.textContent(selector)) ?? "").trim()
const stateOf = (page: Page) => page.getAttribute("#state [data-state]", "data-state")
const fieldOf = (page: Page, form: string, name: string) =>
  page.getAttribute(`form[action$='/${form}'] input[name=${name}]`, "value")

/** Presses Approve; the gateway answers with the approval again and a notice. */
const approve = async (page: Page, approvalUrl: string) => {
  await Promise.all([page.waitForURL(`${approvalUrl}?done=approve`), page.click("#approve")])
  expect(await text(page, "#notice")).toBe("Your approval was recorded.")
}

/** Everything a reviewer decides on, as the page shows it. */
const expectReviewPage = async (page: Page, args: Record<string, unknown>, requester: Account, votes: string) => {
  expect(await page.title()).toBe("Approval for ops__deploy")
  expect(await text(page, "#tool")).toBe("deploy on backend ops")
  expect(await text(page, "#requester")).toContain(`${requester.displayName} (${requester.username})`)
  expect(await text(page, "#needs")).toBe("two distinct reviewers")
  expect(await text(page, "#risk")).toBe("raised by risk rule 0")
  expect(await text(page, "#votes")).toMatch(new RegExp(`^${votes}`))
  // The arguments are text: exactly the JSON of what was asked, the markup in it not parsed as an element.
  expect(JSON.parse((await page.textContent("#arguments")) ?? "")).toEqual(args)
  expect(await page.textContent("#arguments")).toContain(`"version": "${MARKUP}\\u034f\\ufe0f\\udb40\\udd00\\u3164"`)
  expect(await page.textContent("#arguments")).not.toMatch(/[\u034f\ufe0f\u3164]|\u{e0100}/u)
  expect(await page.locator("#hidden-characters").count()).toBe(1)
  expect(await page.locator("#arguments *").count()).toBe(0)
  expect(await page.locator("img").count()).toBe(0)
}

describe("a real browser (Chromium + playwright-core) approving through the review page", () => {
  it("two reviewers sign in from the approval link and approve; the requester cannot; a cross-origin post counts for nothing; resumed once", async () => {
    const requester = await withPassword((await person(gateway, { approver: true })).userId, "Rita Requester")
    const requesterToken = await gateway.token({ subject: requester.userId })
    const alice = await withPassword((await person(gateway, { approver: true, tools: false })).userId, "Alice Reviewer")
    const bob = await withPassword((await person(gateway, { approver: true, tools: false })).userId, "Bob Reviewer")

    // The requester's agent asks for a production deploy: the risk rule raises it to two approvals.
    const operationId = `browser-${Date.now()}`
    const args = { operation_id: operationId, environment: "production", version: VERSION }
    const pending = await deploy(gateway, requesterToken, args)
    expect(pending.structuredContent).toMatchObject({ state: "pending", required_approvals: 2 })
    const approvalId = approvalIdOf(pending)
    const approvalUrl = String(pending.structuredContent?.["approval_url"])
    expect(approvalUrl).toBe(`${gateway.baseUrl}/sso/approvals/${approvalId}`)

    // Reviewer 1 follows the link signed out, signs in for real and lands on the approval.
    const first = await browsers.open()
    await signInVia(first.page, approvalUrl, alice)
    // The review page is served under the gateway's CSP: no script runs, nothing loads (checked at the end).
    const shown = await first.page.reload()
    expect(shown?.headers()["content-security-policy"]).toContain("default-src 'none'")
    await expectReviewPage(first.page, args, requester, "0 of 2")
    expect(await stateOf(first.page)).toBe("pending")
    const intent = await fieldOf(first.page, "approve", "intent")
    expect(intent).toMatch(/^[0-9a-f]{64}$/)
    await approve(first.page, approvalUrl)
    expect(await stateOf(first.page)).toBe("pending")
    expect(await text(first.page, "#votes")).toMatch(/^1 of 2\s*Alice Reviewer,/)
    expect(await first.page.locator("#approve").count()).toBe(0)
    expect(await text(first.page, "#approve-blocked")).toBe("You have approved this request.")
    expect((await statusOf(gateway, requesterToken, approvalId)).structuredContent).toMatchObject({
      state: "pending",
      approvals: 1,
      voters: [{ name: "Alice Reviewer" }]
    })

    // The requester holds the approver role too: their own request offers no Approve button…
    const own = await browsers.open()
    await signInVia(own.page, approvalUrl, requester)
    await expectReviewPage(own.page, args, requester, "1 of 2")
    expect(await own.page.locator("#approve").count()).toBe(0)
    expect(await text(own.page, "#approve-blocked")).toBe("You cannot approve your own request.")
    // …and a hand-made approve form, with their session's anti-CSRF token and the shown intent, is refused.
    const selfVote = await own.context.request.post(`${approvalUrl}/approve`, {
      form: { csrf: (await fieldOf(own.page, "reject", "csrf")) ?? "", intent: intent ?? "" },
      headers: { origin: gateway.baseUrl },
      maxRedirects: 0
    })
    expect(selfVote.status()).toBe(403)
    expect(await selfVote.text()).toContain("You cannot approve your own request. Nothing was changed.")
    expect(logs.events("approval.review_refused")).toEqual([
      expect.objectContaining({ approval_id: approvalId, reviewer: requester.userId, reason: "self_approval" })
    ])

    // Reviewer 2 signs in the same way.
    const second = await browsers.open()
    await signInVia(second.page, approvalUrl, bob)
    await expectReviewPage(second.page, args, requester, "1 of 2")
    const csrf = (await fieldOf(second.page, "approve", "csrf")) ?? ""
    expect(await fieldOf(second.page, "approve", "intent")).toBe(intent)

    // A page on another origin posts reviewer 2's approve form (even with the right token and intent):
    // the browser sends the session cookie (same site) but its own Origin, and the gateway refuses.
    const approveUrl = `${approvalUrl}/approve`
    elsewherePage = `<!doctype html><title>elsewhere</title><form method="post" action="${approveUrl}"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="intent" value="${intent}"><button id="go">Continue</button></form>`
    const lure = await second.context.newPage()
    lure.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) browsers.problems.csp.push(message.text())
    })
    await lure.goto(`${elsewhereOrigin()}/`)
    const [crossOrigin] = await Promise.all([
      lure.waitForResponse((response) => response.url() === approveUrl && response.request().method() === "POST"),
      lure.click("#go")
    ])
    expect(crossOrigin.status()).toBe(403)
    expect((await crossOrigin.request().allHeaders())["origin"]).toBe(elsewhereOrigin())
    await lure.waitForURL(approveUrl)
    expect(await text(lure, "h1")).toBe("Request refused")
    expect(await text(lure, "main p")).toBe("This form was not submitted from the gateway's own page.")
    await lure.close()
    // Fetch metadata alone (no Origin) saying another site sent it is refused too.
    const crossSite = await second.context.request.post(approveUrl, {
      form: { csrf, intent: intent ?? "" },
      headers: { "sec-fetch-site": "cross-site" },
      maxRedirects: 0
    })
    expect(crossSite.status()).toBe(403)
    // Nothing was recorded: no vote, not even a refusal, and the page still waits for reviewer 2.
    expect(logs.events("approval.vote").map((event) => event["reviewer"])).toEqual([alice.userId])
    expect(logs.events("approval.review_refused")).toHaveLength(1)
    expect((await statusOf(gateway, requesterToken, approvalId)).structuredContent).toMatchObject({
      state: "pending",
      approvals: 1
    })
    await second.page.reload()
    expect(await text(second.page, "#votes")).toMatch(/^1 of 2/)

    // Reviewer 2 approves: the quorum is reached.
    await approve(second.page, approvalUrl)
    expect(await stateOf(second.page)).toBe("approved")
    expect(await text(second.page, "#votes")).toMatch(/^2 of 2\s*Alice Reviewer,.*\s*Bob Reviewer,/s)
    expect(await second.page.locator("#approve").count()).toBe(0)
    expect(await second.page.locator("#revoke").count()).toBe(1)
    expect(ops.executions.get(operationId)).toBeUndefined()
    expect((await statusOf(gateway, requesterToken, approvalId)).structuredContent).toMatchObject({
      state: "approved",
      approvals: 2
    })

    // The requester resumes through MCP: the backend runs exactly the reviewed arguments, once.
    const done = await resume(gateway, requesterToken, approvalId)
    expect(done.structuredContent).toEqual({ deployed: VERSION, environment: "production" })
    expect(ops.executions.get(operationId)).toBe(1)
    const again = await resume(gateway, requesterToken, approvalId)
    expect(again.structuredContent).toMatchObject({ error: "approval_not_approved" })
    expect(ops.executions.get(operationId)).toBe(1)
    await first.page.reload()
    expect(await stateOf(first.page)).toBe("completed")
    expect(logs.events("approval.vote").map((event) => event["reviewer"])).toEqual([alice.userId, bob.userId])
    expect(logs.events("approval.approved")).toHaveLength(1)
    expect(logs.events("approval.executed")).toHaveLength(1)

    for (const each of [first, own, second]) await each.context.close()
    expect(browsers.problems).toEqual({ csp: [], dialogs: [], errors: [] })
  })
})
