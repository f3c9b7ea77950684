/**
 * Gateway-provided tools (docs/access-policy.md, "Gateway-provided tools") have a place in the
 * catalog and in ToolCalls beside the backends' tools: listed under their own name, shown and callable
 * only where the PolicyEngine's view allows, on both /mcp paths, and part of the view's fingerprint so
 * the tools/list page cache never hands one caller's page to a caller who sees otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { GatewayTool } from "../../src/mcp/catalog/gateway-tools.js"
import { grantAccess } from "../support/grants.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

const whoami: GatewayTool = {
  definition: {
    name: "gateway_whoami",
    description: "Says who the gateway thinks you are (approvers only)",
    inputSchema: { type: "object" }
  },
  allowed: (view) => view.grant?.roles.has("approver") === true,
  call: async (request) => ({
    _tag: "Result",
    result: { content: [{ type: "text", text: request.view.caller.subject }] }
  })
}

let alpha: TestBackend
let gateway: TestGateway
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  gateway = await startTestGateway({
    policy: "store",
    gatewayTools: [whoami],
    patch: { backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }] }
  })
})
afterAll(async () => {
  for (const client of open) await client.close()
  await gateway?.close()
  await alpha?.stop()
})

const person = async (roles: ReadonlyArray<string>) => {
  const { userId } = await gateway.run(grantAccess([{ endpoint_id: "alpha", tools: ["echo"] }], { roles }))
  const token = await gateway.token({ subject: userId })
  const client = await connectClient(gateway.mcpUrl, token)
  open.push(client)
  return { userId, token, client }
}

const viaSdk = async (token: string, method: string, params: Record<string, unknown>) =>
  jsonRpcOf(
    await rawPost(
      gateway.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 3, method, params: { ...params, _meta: { "com.example/x": 1 } } }),
      { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
    )
  )

describe("gateway-provided tools", () => {
  it("are listed and called beside backend tools where the view allows, on both paths", async () => {
    const approver = await person(["approver"])
    const names = (await approver.client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual(["alpha__echo", "gateway_whoami"])
    const direct = await approver.client.callTool({ name: "gateway_whoami", arguments: {} })
    expect(direct.content).toEqual([{ type: "text", text: approver.userId }])
    const sdk = await viaSdk(approver.token, "tools/call", { name: "gateway_whoami", arguments: {} })
    expect(sdk["result"]).toEqual({ content: [{ type: "text", text: approver.userId }] })
  })

  it("are hidden and unknown to callers the view does not allow, even after an allowed caller's page was cached", async () => {
    const approver = await person(["approver"])
    expect((await approver.client.listTools()).tools.map((tool) => tool.name)).toContain("gateway_whoami")
    // Same backend access, no approver role: another fingerprint, another page.
    const plain = await person([])
    expect((await plain.client.listTools()).tools.map((tool) => tool.name)).toEqual(["alpha__echo"])
    const refused = await plain.client
      .callTool({ name: "gateway_whoami", arguments: {} })
      .catch((error: Error) => error)
    expect(refused).toMatchObject({ code: -32602, message: expect.stringContaining("Unknown tool: gateway_whoami") })
    const sdk = await viaSdk(plain.token, "tools/list", {})
    expect((sdk["result"] as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name)).toEqual([
      "alpha__echo"
    ])
  })
})
