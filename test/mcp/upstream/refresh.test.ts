/**
 * Catalog refresh (issue 3, Backends: "refresh on list_changed notifications and on a bounded
 * interval"): a backend that announces a changed tool list is refetched at once, one that changes
 * silently is refetched after `catalog.refresh_interval`, and clients see the new list on both paths
 * (the direct path's cached pages are cut from the catalog they were built from, never an older one).
 */
import type { McpServer } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { startBackend, type TestBackend } from "../../support/mcp-backends.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"

let loud: TestBackend
let quiet: TestBackend
/** Only list_changed can tell this one (the default refresh_interval is 5 minutes). */
let listening: TestGateway
/** This one refetches every second. */
let polling: TestGateway
// The backends build a server per request, so what they offer follows these at once.
const offered = { loud: ["first"], quiet: ["first"] }

const register = (names: () => ReadonlyArray<string>) => (server: McpServer) => {
  for (const name of names()) {
    server.registerTool(name, { inputSchema: z.object({}) }, async () => ({ content: [{ type: "text", text: name }] }))
  }
}

beforeAll(async () => {
  loud = await startBackend(
    "loud",
    register(() => offered.loud),
    { era: "modern-only" }
  )
  quiet = await startBackend(
    "quiet",
    register(() => offered.quiet)
  )
  const backends = [
    { id: "loud", url: loud.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
    { id: "quiet", url: quiet.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
  ]
  listening = await startTestGateway({ patch: { backends } })
  polling = await startTestGateway({ patch: { backends, catalog: { refresh_interval: "1s" } } })
})
afterAll(async () => {
  await listening?.close()
  await polling?.close()
  await loud?.stop()
  await quiet?.stop()
})

const names = async (gateway: TestGateway, era: "modern" | "legacy") => {
  const client = await connectClient(gateway.mcpUrl, await gateway.token(), era)
  const { tools } = await client.listTools()
  await client.close()
  return tools.map((tool) => tool.name).sort()
}

describe("catalog refresh", () => {
  it("a backend's list_changed announcement is followed at once; its new tool is callable", async () => {
    expect(await names(listening, "modern")).toContain("loud__first")
    offered.loud = ["first", "second"]
    loud.toolsChanged()
    await expect.poll(() => names(listening, "modern"), { timeout: 3_000 }).toContain("loud__second")
    expect(await names(listening, "legacy")).toContain("loud__second")
    const client = await connectClient(listening.mcpUrl, await listening.token())
    expect((await client.callTool({ name: "loud__second", arguments: {} })).content).toEqual([
      { type: "text", text: "second" }
    ])
    await client.close()
  })

  it("a backend that changes without a word is refetched after catalog.refresh_interval; removed tools go", async () => {
    offered.quiet = ["renamed"]
    await expect.poll(() => names(polling, "modern"), { timeout: 5_000, interval: 200 }).toContain("quiet__renamed")
    expect(await names(polling, "modern")).not.toContain("quiet__first")
    // The other gateway was not told and does not poll often: it still offers the old tool.
    expect(await names(listening, "modern")).toContain("quiet__first")
  })
})
