/**
 * Input requests (docs/mcp.md, "Input requests"; issue: interoperability, "Sampling and elicitation"):
 * a 2026-07-28 backend tool that needs the person's input answers `input_required`; the gateway hands
 * that to a 2026-07-28 caller and passes the caller's retry — `inputResponses` and the backend's
 * `requestState` — back to the backend, deciding each leg like any call, on both /mcp paths.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { acceptedContent, inputRequired } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { startBackend, type TestBackend } from "../support/mcp-backends.js"
import { rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let backend: TestBackend
let direct: TestGateway
let sdk: TestGateway

beforeAll(async () => {
  backend = await startBackend("desk", (server) => {
    server.registerTool("confirm", { inputSchema: z.object({ what: z.string() }) }, async ({ what }, ctx) => {
      if (ctx.mcpReq.inputResponses?.["ok"] === undefined) {
        return inputRequired({
          inputRequests: {
            ok: inputRequired.elicit({
              message: `Really ${what}?`,
              requestedSchema: { type: "object", properties: { sure: { type: "boolean" } }, required: ["sure"] }
            })
          },
          requestState: `state-for-${what}`
        })
      }
      const content = acceptedContent(ctx.mcpReq.inputResponses, "ok")
      const state = ctx.mcpReq.requestState()
      return { content: [{ type: "text", text: `${what}: ${JSON.stringify(content)} (${String(state)})` }] }
    })
  })
  const patch = {
    backends: [
      { id: "desk", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
    ]
  }
  direct = await startTestGateway({ patch })
  sdk = await startTestGateway({ patch, directPath: false })
})
afterAll(async () => {
  await direct?.close()
  await sdk?.close()
  await backend?.stop()
})

describe.each([
  ["direct", () => direct],
  ["SDK", () => sdk]
] as const)("on the %s path", (_, gatewayOf) => {
  it("a 2026-07-28 client answers the backend's elicitation and the retry completes the call", async () => {
    const gateway = gatewayOf()
    const token = await gateway.token()
    const client = new Client(
      { name: "asker", version: "1.0.0" },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: "auto" } }
    )
    const asked: Array<unknown> = []
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params)
      return { action: "accept", content: { sure: true } }
    })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: { token: async () => token } })
    )
    const result = await client.callTool({ name: "desk__confirm", arguments: { what: "deploy" } })
    expect(result.content).toEqual([{ type: "text", text: 'deploy: {"sure":true} (state-for-deploy)' }])
    expect(asked).toEqual([expect.objectContaining({ message: "Really deploy?" })])
    // Both legs reached the backend: the first without input, the retry with it and the state.
    const legs = backend.requests.filter((request) => request.body.includes('"confirm"')).slice(-2)
    expect(legs[0]?.body).not.toContain("inputResponses")
    expect(legs[1]?.body).toContain('"inputResponses"')
    expect(legs[1]?.body).toContain('"requestState":"state-for-deploy"')
    await client.close()
  })
})

describe("a 2025-era caller", () => {
  it("is asked by the gateway on its call's stream; its answer, POSTed on its own, completes the call", async () => {
    const token = await direct.token()
    const client = new Client(
      { name: "asker-2025", version: "1.0.0" },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: "legacy" } }
    )
    const asked: Array<unknown> = []
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params)
      return { action: "accept", content: { sure: false } }
    })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(direct.mcpUrl), { authProvider: { token: async () => token } })
    )
    const result = await client.callTool({ name: "desk__confirm", arguments: { what: "restart" } })
    expect(result.content).toEqual([{ type: "text", text: 'restart: {"sure":false} (state-for-restart)' }])
    expect(asked).toEqual([expect.objectContaining({ message: "Really restart?" })])
    await client.close()
  })

  it("an answer that matches no request the gateway is waiting for is refused", async () => {
    const response = await rawPost(
      direct.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: "gateway-input-00000000-0000-0000-0000-000000000000", result: {} }),
      { authorization: `Bearer ${await direct.token()}`, "mcp-protocol-version": "2025-11-25" }
    )
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "Invalid Request: this response answers no request the gateway is waiting for." }
    })
  })

  it("another caller cannot answer a request for input sent to someone else", async () => {
    const token = await direct.token({ subject: "owner" })
    let minted: string | undefined
    const intruderToken = await direct.token({ subject: "intruder" })
    const client = new Client(
      { name: "slow-asker", version: "1.0.0" },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: "legacy" } }
    )
    client.setRequestHandler("elicitation/create", async (_request, ctx) => {
      minted = String(ctx.mcpReq.id)
      // The intruder answers first, with the id it somehow learned: refused, and the owner's answer still counts.
      const stolen = await rawPost(
        direct.mcpUrl,
        JSON.stringify({ jsonrpc: "2.0", id: minted, result: { action: "accept", content: { sure: true } } }),
        { authorization: `Bearer ${intruderToken}`, "mcp-protocol-version": "2025-11-25" }
      )
      expect(stolen.status).toBe(400)
      return { action: "decline" }
    })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(direct.mcpUrl), { authProvider: { token: async () => token } })
    )
    const result = await client.callTool({ name: "desk__confirm", arguments: { what: "x" } })
    expect(minted).toMatch(/^gateway-input-/)
    expect(result.content).toEqual([{ type: "text", text: "x: undefined (state-for-x)" }])
    await client.close()
  })
})
