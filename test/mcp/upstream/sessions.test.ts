/**
 * Backends with sessions (issue 3: "work with backends that speak 2025-06-18, 2025-11-25 and
 * 2026-07-28"): a stateful 2025-06-18 backend gets its session id and protocol version on every call,
 * on both of the gateway's paths, and a backend that lost its sessions (it restarted) is reconnected.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type StatefulBackend, startStatefulBackend } from "../../support/mcp-backends.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"

let backend: StatefulBackend
let gateway: TestGateway

beforeAll(async () => {
  backend = await startStatefulBackend("keep")
  gateway = await startTestGateway({
    patch: { backends: [{ id: "keep", url: backend.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }] }
  })
})
afterAll(async () => {
  await gateway?.close()
  await backend?.stop()
})

const callsSeen = () => backend.requests.filter((request) => request.body.includes('"tools/call"'))

describe("a stateful 2025-06-18 backend", () => {
  it.each(["modern", "legacy"] as const)("gets its session id and version on a %s client's call", async (era) => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token(), era)
    const result = await client.callTool({ name: "keep__echo", arguments: { message: era } })
    expect(result.content).toEqual([{ type: "text", text: era }])
    const sent = callsSeen().at(-1)
    expect(backend.sessions()).toContain(sent?.headers["mcp-session-id"])
    expect(sent?.headers["mcp-protocol-version"]).toBe("2025-06-18")
    await client.close()
  })

  it("a call that finds its session gone (the backend restarted) is sent again on a new session", async () => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const before = backend.sessions()
    backend.forgetSessions()
    const sentBefore = callsSeen().length
    // The caller sees no error: the 404 ran nothing, so the gateway reconnects and sends the call again.
    const result = await client.callTool({ name: "keep__echo", arguments: { message: "again" } })
    expect(result.content).toEqual([{ type: "text", text: "again" }])
    const [lost, retried] = callsSeen().slice(sentBefore)
    expect(before).toContain(lost?.headers["mcp-session-id"])
    expect(backend.sessions()).toEqual([retried?.headers["mcp-session-id"]])
    await client.close()
  })

  it("on the SDK's path (a 2025-era client's unusual request) the call is sent again as well", async () => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token(), "legacy")
    backend.forgetSessions()
    const result = await client.callTool({
      name: "keep__echo",
      arguments: { message: "sdk" },
      _meta: { "com.example/trace": "t" }
    })
    expect(result.content).toEqual([{ type: "text", text: "sdk" }])
    expect(backend.sessions()).toHaveLength(1)
    await client.close()
  })
})
