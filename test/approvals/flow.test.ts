/**
 * docs/approvals.md end to end: a real backend, the real gateway and stored policy, real MCP clients and
 * the review page over HTTP. What the backend counts is what reached it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  approvalIdOf,
  browserOf,
  deploy,
  type OpsBackend,
  person,
  resume,
  review,
  reviewPage,
  startApprovalGateway,
  startOps,
  statusOf
} from "../support/approvals.js"
import type { TestGateway } from "../support/mcp-gateway.js"

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
