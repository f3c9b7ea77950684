/**
 * docs/approvals.md, "Try it": the embedded default (`config/gateway.yaml`, the demo notes backend, the
 * `--dev` setup) shows a write waiting for approval; the administrator approves it on the review page;
 * the developer resumes it once and the note exists. The file's own tool rules, the real demo backend.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parse } from "yaml"
import { ensureDevelopmentAccess } from "../../src/demo/dev-access.js"
import { startDemoBackend } from "../../src/demo/serve.js"
import { initAdmin } from "../../src/identity/local/admin.js"
import { UserRepo } from "../../src/store/users.js"
import { browserOf, callTool, review } from "../support/approvals.js"
import { freePort } from "../support/gateway-process.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

const shipped = parse(readFileSync(resolve(import.meta.dirname, "../../config/gateway.yaml"), "utf8")) as {
  readonly backends: ReadonlyArray<Record<string, unknown>>
}

let gateway: TestGateway
let demo: Awaited<ReturnType<typeof startDemoBackend>>

beforeAll(async () => {
  const port = await freePort()
  demo = await startDemoBackend(port)
  const backends = shipped.backends.map((backend) => ({ ...backend, url: `http://127.0.0.1:${port}/mcp` }))
  gateway = await startTestGateway({ policy: "store", patch: { backends } })
})
afterAll(async () => {
  await gateway?.close()
  await new Promise((done) => demo?.close(done))
})

describe("the embedded default shows write approvals", () => {
  it("the developer's create_note waits; the administrator approves it on the review page; the resume creates the note once", async () => {
    const { config } = gateway.loaded()
    const { developerId, adminId } = await gateway.run(
      Effect.gen(function* () {
        yield* initAdmin({
          reset: false,
          resetPassword: true,
          resetMfa: false,
          password: Redacted.make("walkthrough-password-1")
        })
        const developerId = yield* ensureDevelopmentAccess(config)
        const admin = yield* (yield* UserRepo).findBuiltinAdmin
        return { developerId, adminId: admin._tag === "Some" ? admin.value.id : "" }
      })
    )
    const token = await gateway.token({ subject: developerId })
    const asked = await callTool(gateway, token, "demo__create_note", { title: "Hello", body: "approved first" })
    expect(asked.content?.[0]?.text).toContain("was not executed")
    const approvalId = String(asked.structuredContent?.["approval_id"])
    const before = await callTool(gateway, token, "demo__list_notes", {})
    expect(before.content?.[0]?.text).not.toContain("Hello")

    const admin = await browserOf(gateway, adminId)
    expect((await review(gateway, admin.cookie, approvalId, "approve")).status).toBe(303)
    const done = await callTool(gateway, token, "gateway_resume_approval", { approval_id: approvalId })
    expect(done.content?.[0]?.text).toContain("Hello")
    const after = await callTool(gateway, token, "demo__list_notes", {})
    expect(after.content?.[0]?.text).toContain("Hello")
    const again = await callTool(gateway, token, "gateway_resume_approval", { approval_id: approvalId })
    expect(again.structuredContent).toMatchObject({ error: "approval_not_approved" })
  })
})
