/**
 * docs/approvals.md end to end: a real backend, the real gateway and stored policy, real MCP clients and
 * the review page over HTTP. What the backend counts is what reached it.
 */
import { Clock, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PolicyWrites } from "../../src/policy/writes.js"
import { UserRepo } from "../../src/store/users.js"
import {
  approvalIdOf,
  browserOf,
  callTool,
  deploy,
  type OpsBackend,
  opsBackendConfig,
  person,
  resume,
  review,
  reviewPage,
  startApprovalGateway,
  startOps,
  statusOf
} from "../support/approvals.js"
import { grantAccessTo, testActor } from "../support/grants.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import type { TestGateway } from "../support/mcp-gateway.js"

/** An administrator disables `userId` (their votes stop counting). */
const disable = (userId: string) =>
  Effect.gen(function* () {
    const user = Option.getOrThrow(yield* (yield* UserRepo).findById(userId))
    yield* (yield* PolicyWrites).updateUser(testActor, userId, user.revision, { enabled: false })
  })

/** A local account named `username`, holding the approver role. */
const localApprover = (username: string) =>
  Effect.gen(function* () {
    const at = new Date(yield* Clock.currentTimeMillis)
    const id = yield* (yield* UserRepo).insertLocal({ kind: "local", username, displayName: username, at })
    yield* grantAccessTo(id, [], { roles: ["approver"] })
    return id
  })

/** An enabled enterprise identity of `namespace`, holding the approver role. */
const enterpriseApprover = (namespace: string, subject: string) =>
  Effect.gen(function* () {
    const at = new Date(yield* Clock.currentTimeMillis)
    const id = yield* (yield* UserRepo).insertEnterprise({
      namespace,
      externalSubject: subject,
      displayName: subject,
      at
    })
    const user = Option.getOrThrow(yield* (yield* UserRepo).findById(id))
    yield* (yield* PolicyWrites).updateUser(testActor, id, user.revision, { enabled: true })
    yield* grantAccessTo(id, [], { roles: ["approver"] })
    return id
  })

let ops: OpsBackend
let gateway: TestGateway

beforeAll(async () => {
  ops = await startOps()
  gateway = await startApprovalGateway(ops)
})
afterAll(async () => {
  await gateway?.close()
  await ops?.stop()
})

let sequence = 0
const opId = () => `op-${Date.now()}-${sequence++}`

describe("a write to a tool with an approval rule", () => {
  it("answers pending with an approval_id and how to follow up; nothing reaches the backend", async () => {
    const requester = await person(gateway)
    const id = opId()
    const answer = await deploy(gateway, requester.token, { operation_id: id, environment: "staging", version: "1.2" })
    expect(answer.isError).toBe(false)
    expect(answer.structuredContent).toMatchObject({
      state: "pending",
      required_approvals: 1,
      require_step_up: false,
      resume_tool: "gateway_resume_approval",
      status_tool: "gateway_approval_status"
    })
    const approvalId = approvalIdOf(answer)
    expect(approvalId).toMatch(/^apr_[A-Za-z0-9_-]{22}$/)
    expect(answer.structuredContent?.["approval_url"]).toBe(`${gateway.baseUrl}/sso/approvals/${approvalId}`)
    expect(ops.executions.get(id)).toBeUndefined()
    const status = await statusOf(gateway, requester.token, approvalId)
    expect(status.structuredContent).toMatchObject({
      approval_id: approvalId,
      state: "pending",
      approvals: 0,
      voters: []
    })
  })

  it("approved on the review page, resumed once: the backend executes exactly the reviewed arguments, and the result is cached", async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const id = opId()
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: id, environment: "staging", version: "2.0" })
    )
    const browser = await browserOf(gateway, reviewer.userId)
    const page = await (await reviewPage(gateway, browser.cookie, approvalId)).text()
    expect(page).toContain("&quot;version&quot;: &quot;2.0&quot;")
    const approved = await review(gateway, browser.cookie, approvalId, "approve")
    expect(approved.status).toBe(303)
    const status = await statusOf(gateway, requester.token, approvalId)
    expect(status.structuredContent).toMatchObject({ state: "approved", approvals: 1 })
    expect(status.structuredContent?.["execute_by"]).not.toBeNull()
    expect(ops.executions.get(id)).toBeUndefined()

    const done = await resume(gateway, requester.token, approvalId)
    expect(done.structuredContent).toEqual({ deployed: "2.0", environment: "staging" })
    expect(ops.executions.get(id)).toBe(1)
    const again = await resume(gateway, requester.token, approvalId)
    expect(again.structuredContent).toMatchObject({ error: "approval_not_approved" })
    expect(ops.executions.get(id)).toBe(1)
    const finished = await statusOf(gateway, requester.token, approvalId)
    expect(finished.structuredContent).toMatchObject({ state: "completed", configuration_unchanged: true })
    expect(finished.structuredContent?.["result"]).toMatchObject({ structuredContent: { deployed: "2.0" } })
    // The id is spent: a fresh write with it conflicts, even with the same arguments.
    const reuse = await deploy(gateway, requester.token, { operation_id: id, environment: "staging", version: "2.0" })
    expect(reuse.structuredContent).toMatchObject({ error: "approval_conflict" })
  })

  it("a retry with the same operation id and arguments returns the same approval; other arguments conflict; another caller is isolated", async () => {
    const requester = await person(gateway)
    const other = await person(gateway)
    const id = opId()
    const args = { operation_id: id, environment: "staging", version: "3.0" }
    const first = approvalIdOf(await deploy(gateway, requester.token, args))
    const retry = await deploy(gateway, requester.token, { version: "3.0", environment: "staging", operation_id: id })
    expect(approvalIdOf(retry)).toBe(first)
    const changed = await deploy(gateway, requester.token, { ...args, version: "3.1" })
    expect(changed.isError).toBe(true)
    expect(changed.structuredContent).toMatchObject({ error: "approval_conflict" })
    const theirs = await deploy(gateway, other.token, args)
    expect(approvalIdOf(theirs)).not.toBe(first)
    // Status is private to the requester.
    const peek = await statusOf(gateway, other.token, first)
    expect(peek.structuredContent).toMatchObject({ error: "approval_not_found" })
  })
})

describe("reviewers", () => {
  it("quorum 2 (a risk rule raises it): the first vote leaves it pending without an execution deadline; the requester cannot vote; a second reviewer approves", async () => {
    const requester = await person(gateway, { approver: true })
    const first = await person(gateway, { approver: true, tools: false })
    const second = await person(gateway, { approver: true, tools: false })
    const id = opId()
    const answer = await deploy(gateway, requester.token, { operation_id: id, environment: "production", version: "9" })
    expect(answer.structuredContent).toMatchObject({ required_approvals: 2 })
    const approvalId = approvalIdOf(answer)
    const own = await browserOf(gateway, requester.userId)
    const ownPage = await (await reviewPage(gateway, own.cookie, approvalId)).text()
    expect(ownPage).not.toContain('id="approve"')
    expect(ownPage).toContain("You cannot approve your own request.")
    const selfVote = await review(gateway, own.cookie, approvalId, "approve", { csrf: own.csrf })
    expect(selfVote.status).toBe(403)

    expect((await review(gateway, (await browserOf(gateway, first.userId)).cookie, approvalId, "approve")).status).toBe(
      303
    )
    const half = await statusOf(gateway, requester.token, approvalId)
    expect(half.structuredContent).toMatchObject({
      state: "pending",
      approvals: 1,
      required_approvals: 2,
      execute_by: null
    })
    const twice = await review(gateway, (await browserOf(gateway, first.userId)).cookie, approvalId, "approve", {
      csrf: (await browserOf(gateway, first.userId)).csrf
    })
    expect(twice.status).toBeGreaterThanOrEqual(400)

    expect(
      (await review(gateway, (await browserOf(gateway, second.userId)).cookie, approvalId, "approve")).status
    ).toBe(303)
    const full = await statusOf(gateway, requester.token, approvalId)
    expect(full.structuredContent).toMatchObject({ state: "approved", approvals: 2 })
    expect(ops.executions.get(id)).toBeUndefined()
  })

  it("a risk argument that is missing or mistyped fails closed to the strongest policy (two reviewers)", async () => {
    const requester = await person(gateway)
    for (const environment of [undefined, 42, ""]) {
      const args = { operation_id: opId(), version: "1", ...(environment === undefined ? {} : { environment }) }
      const answer = await deploy(gateway, requester.token, args)
      expect(answer.structuredContent).toMatchObject({ state: "pending", required_approvals: 2 })
    }
  })

  it("someone without the approver role sees nothing and cannot vote, answered 404 as for an unknown id; a signed-out browser is sent to sign in and back", async () => {
    const requester = await person(gateway)
    const outsider = await person(gateway, { tools: false })
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: opId(), environment: "dev" })
    )
    const browser = await browserOf(gateway, outsider.userId)
    expect((await reviewPage(gateway, browser.cookie, approvalId)).status).toBe(404)
    // Refused as an unknown approval would be: nobody learns it exists.
    expect((await review(gateway, browser.cookie, approvalId, "approve", { csrf: browser.csrf })).status).toBe(404)
    expect((await review(gateway, browser.cookie, approvalId, "reject", { csrf: browser.csrf })).status).toBe(404)
    const signedOut = await reviewPage(gateway, "", approvalId)
    expect(signedOut.status).toBe(303)
    expect(signedOut.headers.get("location")).toBe(`/sso?next=${encodeURIComponent(`/sso/approvals/${approvalId}`)}`)
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({ approvals: 0 })
  })

  it("a form posted from another origin, or without the page's anti-CSRF token, changes nothing", async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: opId(), environment: "dev" })
    )
    const browser = await browserOf(gateway, reviewer.userId)
    const crossSite = await fetch(`${gateway.baseUrl}/sso/approvals/${approvalId}/approve`, {
      method: "POST",
      headers: {
        cookie: browser.cookie,
        origin: "https://evil.example",
        "content-type": "application/x-www-form-urlencoded"
      },
      body: new URLSearchParams({ csrf: browser.csrf }),
      redirect: "manual"
    })
    expect(crossSite.status).toBe(403)
    expect((await review(gateway, browser.cookie, approvalId, "approve", { csrf: "x".repeat(64) })).status).toBe(403)
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({
      state: "pending",
      approvals: 0
    })
  })

  it("a vote for an intent other than the one stored is refused (the page showed something else)", async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: opId(), environment: "dev" })
    )
    const browser = await browserOf(gateway, reviewer.userId)
    const answer = await review(gateway, browser.cookie, approvalId, "approve", { intent: "0".repeat(64) })
    expect(answer.status).toBe(409)
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({ approvals: 0 })
  })

  it("rejected: the id is spent and resume is refused; revoked after approval: resume is refused, nothing executed", async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const browser = await browserOf(gateway, reviewer.userId)
    const rejectedId = opId()
    const rejected = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: rejectedId, environment: "dev" })
    )
    expect((await review(gateway, browser.cookie, rejected, "reject")).status).toBe(303)
    expect((await statusOf(gateway, requester.token, rejected)).structuredContent).toMatchObject({ state: "rejected" })
    const reuse = await deploy(gateway, requester.token, { operation_id: rejectedId, environment: "dev" })
    expect(reuse.structuredContent).toMatchObject({ error: "approval_conflict" })

    const revokedId = opId()
    const revoked = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: revokedId, environment: "dev" })
    )
    expect((await review(gateway, browser.cookie, revoked, "approve")).status).toBe(303)
    expect((await review(gateway, browser.cookie, revoked, "revoke")).status).toBe(303)
    expect((await resume(gateway, requester.token, revoked)).structuredContent).toMatchObject({
      error: "approval_not_approved"
    })
    expect((await statusOf(gateway, requester.token, revoked)).structuredContent).toMatchObject({ state: "revoked" })
    expect(ops.executions.get(rejectedId)).toBeUndefined()
    expect(ops.executions.get(revokedId)).toBeUndefined()
  })
})

describe("resume", () => {
  const approvedFor = async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const id = opId()
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: id, environment: "dev", version: "5" })
    )
    await review(gateway, (await browserOf(gateway, reviewer.userId)).cookie, approvalId, "approve")
    return { requester, id, approvalId }
  }

  it("ten concurrent resumes of one approved write: the backend executes it once", async () => {
    const { requester, id, approvalId } = await approvedFor()
    const answers = await Promise.all(Array.from({ length: 10 }, () => resume(gateway, requester.token, approvalId)))
    expect(answers.filter((answer) => answer.structuredContent?.["deployed"] === "5")).toHaveLength(1)
    expect(answers.filter((answer) => answer.structuredContent?.["error"] === "approval_not_approved")).toHaveLength(9)
    expect(ops.executions.get(id)).toBe(1)
  })

  it("an outcome the gateway cannot know (the backend outlives the call timeout) becomes unknown and is never replayed", async () => {
    const { requester, id, approvalId } = await approvedFor()
    ops.control.delayMs = 3_000
    try {
      await expect(resume(gateway, requester.token, approvalId)).rejects.toThrow(/did not answer in time/)
    } finally {
      ops.control.delayMs = 0
    }
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({ state: "unknown" })
    expect((await resume(gateway, requester.token, approvalId)).structuredContent).toMatchObject({
      error: "approval_not_approved"
    })
    // Status reads do not reset it.
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({ state: "unknown" })
    expect(ops.executions.get(id)).toBe(1)
    const reuse = await deploy(gateway, requester.token, { operation_id: id, environment: "dev", version: "5" })
    expect(reuse.structuredContent).toMatchObject({ error: "approval_conflict" })
  })

  it("a resume carrying its own requestState and inputResponses sends the backend only the reviewed arguments", async () => {
    const { requester, id, approvalId } = await approvedFor()
    const body = {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: {
        name: "gateway_resume_approval",
        arguments: { approval_id: approvalId },
        requestState: "INJECTED-STATE",
        inputResponses: { confirm: { action: "accept", content: { environment: "production", force: true } } },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": { elicitation: {} }
        }
      }
    }
    const answer = await rawPost(gateway.mcpUrl, JSON.stringify(body), {
      authorization: `Bearer ${requester.token}`,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "gateway_resume_approval"
    })
    expect(JSON.stringify(await jsonRpcOf(answer))).toContain('"deployed":"5"')
    const sent = ops.received.filter((text) => text.includes(`"${id}"`) && text.includes('"deploy"'))
    expect(sent).toHaveLength(1)
    expect(sent[0]).not.toContain("INJECTED")
    expect(sent[0]).not.toContain("inputResponses")
    expect(ops.executions.get(id)).toBe(1)
  })

  it("someone else cannot resume (or see) another person's approval", async () => {
    const { id, approvalId } = await approvedFor()
    const other = await person(gateway)
    expect((await resume(gateway, other.token, approvalId)).structuredContent).toMatchObject({
      error: "approval_not_found"
    })
    expect(ops.executions.get(id)).toBeUndefined()
  })

  it("status with query_upstream asks the backend's status tool with the saved arguments", async () => {
    const { requester, id, approvalId } = await approvedFor()
    await resume(gateway, requester.token, approvalId)
    const status = await statusOf(gateway, requester.token, approvalId, true)
    expect(status.structuredContent).toMatchObject({
      state: "completed",
      upstream_observation: { operation_id: id, executions: 1 }
    })
  })

  it("the 21st active approval of one person is refused; finishing one makes room", async () => {
    const requester = await person(gateway)
    const ids: Array<string> = []
    for (let n = 0; n < 20; n++) {
      const answer = await deploy(gateway, requester.token, { operation_id: opId(), environment: "dev" })
      expect(answer.structuredContent).toMatchObject({ state: "pending" })
      ids.push(approvalIdOf(answer))
    }
    const refused = await deploy(gateway, requester.token, { operation_id: opId(), environment: "dev" })
    expect(refused.structuredContent).toMatchObject({ error: "approval_limit" })
    const reviewer = await person(gateway, { approver: true, tools: false })
    await review(gateway, (await browserOf(gateway, reviewer.userId)).cookie, ids[0]!, "reject")
    const room = await deploy(gateway, requester.token, { operation_id: opId(), environment: "dev" })
    expect(room.structuredContent).toMatchObject({ state: "pending" })
  })

  it("malformed arguments to the gateway's tools get a precise refusal", async () => {
    const requester = await person(gateway)
    for (const args of [
      {},
      { approval_id: 7 },
      { approval_id: "../../etc" },
      { approval_id: `apr_${"a".repeat(500)}` }
    ]) {
      const answer = await callTool(gateway, requester.token, "gateway_resume_approval", args)
      expect(answer.structuredContent).toMatchObject({ error: "invalid_arguments" })
    }
    const extra = await callTool(gateway, requester.token, "gateway_approval_status", {
      approval_id: `apr_${"a".repeat(22)}`,
      query_upstream: "yes"
    })
    expect(extra.structuredContent).toMatchObject({ error: "invalid_arguments" })
    const bad = await deploy(gateway, requester.token, { operation_id: "has spaces", environment: "dev" })
    expect(bad.structuredContent).toMatchObject({ error: "operation_id_invalid" })
    const missing = await deploy(gateway, requester.token, { environment: "dev" })
    expect(missing.structuredContent).toMatchObject({ error: "operation_id_invalid" })
  })
})

describe("a rule that requires step-up", () => {
  let stepUpGateway: TestGateway
  beforeAll(async () => {
    stepUpGateway = await startApprovalGateway(
      ops,
      { require_step_up: true, risk_rules: [] },
      { patch: { approvals: { step_up: { acr_values: ["phr"] } } } }
    )
  })
  afterAll(async () => {
    await stepUpGateway?.close()
  })

  it("a reviewer signed in locally (no OpenID Connect step-up possible) is told so and their vote is refused", async () => {
    const requester = await person(stepUpGateway)
    const reviewer = await person(stepUpGateway, { approver: true, tools: false })
    const answer = await deploy(stepUpGateway, requester.token, { operation_id: opId(), environment: "dev" })
    expect(answer.structuredContent).toMatchObject({ require_step_up: true })
    const approvalId = approvalIdOf(answer)
    const browser = await browserOf(stepUpGateway, reviewer.userId)
    const page = await (await reviewPage(stepUpGateway, browser.cookie, approvalId)).text()
    expect(page).not.toContain('id="approve"')
    expect(page).toContain("a local, LDAP or OAuth2 sign-in cannot provide it")
    const vote = await review(stepUpGateway, browser.cookie, approvalId, "approve", { csrf: browser.csrf })
    expect(vote.status).toBe(409)
    expect(await vote.text()).toContain("fresh sign-in")
    expect((await statusOf(stepUpGateway, requester.token, approvalId)).structuredContent).toMatchObject({
      state: "pending",
      approvals: 0
    })
    const stepUp = await fetch(`${stepUpGateway.baseUrl}/sso/approvals/${approvalId}/step-up?csrf=${browser.csrf}`, {
      headers: { cookie: browser.cookie },
      redirect: "manual"
    })
    expect(stepUp.status).toBe(403)
  })
})

describe("a configuration change after approval", () => {
  it("withholds the cached result and upstream lookups, and refuses to resume, once the tool's rule changed (a reload)", async () => {
    const changing = await startApprovalGateway(ops)
    try {
      const requester = await person(changing)
      const reviewer = await person(changing, { approver: true, tools: false })
      const cookie = (await browserOf(changing, reviewer.userId)).cookie
      const completedId = opId()
      const completed = approvalIdOf(
        await deploy(changing, requester.token, { operation_id: completedId, environment: "dev" })
      )
      await review(changing, cookie, completed, "approve")
      await resume(changing, requester.token, completed)
      const waiting = approvalIdOf(
        await deploy(changing, requester.token, { operation_id: opId(), environment: "dev" })
      )
      await review(changing, cookie, waiting, "approve")
      expect((await statusOf(changing, requester.token, completed)).structuredContent?.["result"]).not.toBeNull()

      await changing.reload({ backends: [opsBackendConfig(ops.url, { required_approvals: 2, risk_rules: [] })] })
      const status = await statusOf(changing, requester.token, completed, true)
      expect(status.structuredContent).toMatchObject({
        state: "completed",
        configuration_unchanged: false,
        result: null,
        upstream_observation: null
      })
      const refused = await resume(changing, requester.token, waiting)
      expect(refused.structuredContent).toMatchObject({ error: "approval_configuration_changed" })
      // Nothing was sent, and it stays approved (a reload back to the reviewed rule could still run it).
      expect((await statusOf(changing, requester.token, waiting)).structuredContent).toMatchObject({
        state: "approved"
      })
      expect(ops.executions.get(completedId)).toBe(1)
    } finally {
      await changing.close()
    }
  })
})

describe("votes count only while their reviewers may review", () => {
  it("a reviewer disabled after voting no longer counts: quorum 2 needs another vote, and an approved write goes back to pending before it runs", async () => {
    const requester = await person(gateway)
    const first = await person(gateway, { approver: true, tools: false })
    const second = await person(gateway, { approver: true, tools: false })
    const third = await person(gateway, { approver: true, tools: false })
    const id = opId()
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: id, environment: "production" })
    )
    await review(gateway, (await browserOf(gateway, first.userId)).cookie, approvalId, "approve")
    await gateway.run(disable(first.userId))
    await review(gateway, (await browserOf(gateway, second.userId)).cookie, approvalId, "approve")
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({
      state: "pending",
      approvals: 1
    })
    await review(gateway, (await browserOf(gateway, third.userId)).cookie, approvalId, "approve")
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({
      state: "approved"
    })
    // The second reviewer loses the role before the resume: the write does not run and waits again.
    await gateway.run(disable(second.userId))
    const refused = await resume(gateway, requester.token, approvalId)
    expect(refused.structuredContent).toMatchObject({ error: "approval_not_approved" })
    expect((await statusOf(gateway, requester.token, approvalId)).structuredContent).toMatchObject({
      state: "pending",
      approvals: 1,
      execute_by: null
    })
    expect(ops.executions.get(id)).toBeUndefined()
  })

  it("only the client that asked can resume", async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const id = opId()
    const approvalId = approvalIdOf(await deploy(gateway, requester.token, { operation_id: id, environment: "dev" }))
    await review(gateway, (await browserOf(gateway, reviewer.userId)).cookie, approvalId, "approve")
    const otherClient = await gateway.token({ subject: requester.userId, clientId: "another-client" })
    expect((await resume(gateway, otherClient, approvalId)).structuredContent).toMatchObject({
      error: "approval_not_found"
    })
    expect(ops.executions.get(id)).toBeUndefined()
  })
})

describe("a rule naming its approvers", () => {
  it("names a local account as local:<username> and a person by user id; a bare name matches no local account, and a subject of another connection matches nobody", async () => {
    const named = await startApprovalGateway(ops, { approvers: [{ subjects: ["local:rita", "alice"] }] })
    try {
      const requester = await person(named)
      const answer = await deploy(named, requester.token, { operation_id: opId(), environment: "dev" })
      const approvalId = approvalIdOf(answer)
      const rita = await named.run(localApprover("rita"))
      const alice = await named.run(localApprover("alice"))
      const elsewhere = await named.run(enterpriseApprover("oidc:another-connection", "alice"))
      for (const outsider of [alice, elsewhere]) {
        const browser = await browserOf(named, outsider)
        expect((await reviewPage(named, browser.cookie, approvalId)).status).toBe(404)
        expect((await review(named, browser.cookie, approvalId, "approve", { csrf: browser.csrf })).status).toBe(404)
      }
      expect((await review(named, (await browserOf(named, rita)).cookie, approvalId, "approve")).status).toBe(303)
      expect((await statusOf(named, requester.token, approvalId)).structuredContent).toMatchObject({
        state: "approved"
      })
    } finally {
      await named.close()
    }
  })
})
