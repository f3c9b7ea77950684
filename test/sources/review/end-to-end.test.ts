/**
 * docs/tool-sources.md, "Configuration review", end to end with the live ConfigChanges service: the
 * administrator proposes a backend through the Management API (202, nothing activated); a second person,
 * a security reviewer, follows the approval_url in Chromium (playwright-core), signs in through the real
 * /sso pages and presses Approve; the backend's tools then appear in `tools/list` of a user granted it.
 * The time from the click to the first `tools/list` showing them is reported (docs/benchmarks.md).
 */
import { Effect, Exit, Scope } from "effect"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base32Decode, totpAt } from "../../../src/identity/local/totp.js"
import { addLocalUser, adminToken, managementApi } from "../../support/admin-api.js"
import { launchChromium } from "../../support/browser.js"
import { grantAccessTo } from "../../support/grants.js"
import { LogCapture } from "../../support/logs.js"
import { alphaTools, commonTools, startBackend, type TestBackend } from "../../support/mcp-backends.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"
import { mcpUser } from "../../support/tool-source-gateway.js"

const PASSWORD = "a reviewer's long passphrase"
const scope = Effect.runSync(Scope.make())
const logs = new LogCapture()
let gateway: OAuthGateway
let chromium: Browser
let alpha: TestBackend
let notes: TestBackend

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  notes = await startBackend("notes", (server) => commonTools(server, "notes"))
  gateway = await Effect.runPromise(
    Scope.extend(
      oauthGateway({
        logs,
        patch: {
          admin: { approvals: { policy_changes: { enabled: true } } },
          backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }]
        }
      }),
      scope
    )
  )
  chromium = await launchChromium()
})
afterAll(async () => {
  await chromium?.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await notes?.stop()
  await alpha?.stop()
})

describe("configuration review end to end (live ConfigChanges, Chromium)", () => {
  it("an administrator proposes a backend, a second person approves it in the browser, and its tools reach /mcp", async () => {
    const listed = await Effect.runPromise(mcpUser(gateway, ["alpha", "notes"]))
    const toolNames = () => Effect.runPromise(listed)
    expect(await toolNames()).toEqual(["alpha__echo"])

    // The proposal: 202, nothing activated.
    const api = managementApi(gateway, await Effect.runPromise(adminToken(gateway, {}, Date.now())))
    const proposed = await Effect.runPromise(
      api.post("/api/v1/backends", {
        id: "notes",
        url: notes.url,
        allow_insecure_http: true,
        tool_rules: [{ tools: ["*"] }]
      })
    )
    expect(proposed.status).toBe(202)
    expect(proposed.body).toMatchObject({ pending_approval: true })
    const approvalUrl = String(proposed.body["approval_url"])
    const id = String(proposed.body["approval_id"])
    expect(approvalUrl).toBe(`${new URL(gateway.mcpUrl).origin}/auth/login?role=security&proposal=${id}`)
    expect(await toolNames()).toEqual(["alpha__echo"])

    // The reviewer: a second person holding the security role, signing in by browser.
    const reviewerId = await Effect.runPromise(addLocalUser(gateway, "sam-security", PASSWORD))
    await Effect.runPromise(inGateway(gateway)(grantAccessTo(reviewerId, [], { roles: ["security_reviewer"] })))
    const context = await chromium.newContext()
    const page = await context.newPage()
    await page.goto(approvalUrl)
    expect(new URL(page.url()).pathname).toBe("/sso")
    await page.fill("#username", "sam-security")
    await page.fill("#password", PASSWORD)
    await page.click("button[type=submit]")
    await page.waitForSelector("#totp-secret")
    const secret = base32Decode((await page.textContent("#totp-secret")) ?? "")
    await page.fill("#code", totpAt(secret ?? new Uint8Array(), Date.now()))
    const proposalUrl = `${gateway.baseUrl}/auth/reviews/${id}`
    await Promise.all([page.waitForURL(proposalUrl), page.click("button[type=submit]")])
    expect(await page.textContent("#subject")).toContain("notes")
    expect(await page.locator("#diff tbody tr").count()).toBeGreaterThan(0)

    // Approve: the change is applied in one reload, and the user's tools/list shows the new backend.
    const clicked = performance.now()
    await Promise.all([page.waitForURL(`${proposalUrl}?done=approve`), page.click("#approve")])
    let shown = await toolNames()
    while (!shown.includes("notes__echo") && performance.now() - clicked < 10_000) shown = await toolNames()
    const elapsed = performance.now() - clicked
    expect(shown).toEqual(["alpha__echo", "notes__echo", "notes__search"])
    expect(await page.getAttribute("#state [data-state]", "data-state")).toBe("applied")
    process.stdout.write(
      `configuration review: approve click → tools/list showing the change: ${elapsed.toFixed(0)} ms\n`
    )
    expect(logs.events("config.approved").length + logs.events("config.applied").length).toBeGreaterThan(0)
    await context.close()
  })
})
