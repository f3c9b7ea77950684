/**
 * `subscriptions/listen` (2026-07-28) through the gateway, and what failed calls do to it (issue 3:
 * "refresh on list_changed"; docs/mcp.md, Backends): a listen stream outlives `request_timeout` and
 * hears real catalog changes; failed calls probe the backend at most once a second, and a probe that
 * finds the catalog unchanged tells no one.
 */
import type { McpServer } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let backend: TestBackend
let gateway: TestGateway
/** tools/call answers with this HTTP status when set. */
let failWith: number | undefined
/** Tools the backend offers besides alphaTools; it builds a server per request, so changes apply at once. */
const extra: Array<string> = []

beforeAll(async () => {
  const tools = (server: McpServer, aborted: Array<string>) => {
    alphaTools(server, aborted)
    for (const name of extra) server.registerTool(name, { inputSchema: z.object({}) }, async () => ({ content: [] }))
  }
  backend = await startBackend("alpha", tools, {
    intercept: (body) =>
      failWith !== undefined && (body as { method?: string } | undefined)?.method === "tools/call"
        ? new Response("no", { status: failWith })
        : undefined
  })
  gateway = await startTestGateway({
    patch: {
      request_timeout: "1s",
      backends: [{ id: "alpha", url: backend.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await backend?.stop()
})

const envelope = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {}
}

const post = async (method: string, params: Record<string, unknown>, name?: string) =>
  fetch(gateway.mcpUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await gateway.token()}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(name === undefined ? {} : { "mcp-name": name })
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: envelope } })
  })

/** Opens a listen stream and collects what it hears until `stop`. */
const listen = async () => {
  const response = await post("subscriptions/listen", { notifications: { toolsListChanged: true } })
  expect(response.headers.get("content-type")).toContain("text/event-stream")
  const reader = response.body!.getReader()
  const state = { heard: "", open: true }
  void (async () => {
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (next.done) break
      state.heard += new TextDecoder().decode(next.value)
    }
    state.open = false
  })()
  return { state, stop: () => reader.cancel().catch(() => {}) }
}

/** The JSON-RPC error code of a call to alpha__echo. */
const callCode = async () => {
  const response = await post("tools/call", { name: "alpha__echo", arguments: { message: "x" } }, "alpha__echo")
  return ((await response.json()) as { error?: { code: number } }).error?.code
}

const changes = (heard: string) => heard.split("notifications/tools/list_changed").length - 1

describe("listChanged is advertised only where it can be delivered", () => {
  it("a 2026-07-28 caller that may subscribe is told listChanged; a 2025-era caller (no stream for it) is not", async () => {
    const token = await gateway.token()
    const modern = await connectClient(gateway.mcpUrl, token, "modern")
    const legacy = await connectClient(gateway.mcpUrl, token, "legacy")
    expect(modern.getServerCapabilities()?.tools).toEqual({ listChanged: true })
    expect(legacy.getServerCapabilities()?.tools).toEqual({ listChanged: false })
    expect(legacy.getServerCapabilities()?.prompts).toEqual({ listChanged: false })
    await modern.close()
    await legacy.close()
  })
})

describe("subscriptions/listen through the gateway", () => {
  it("outlives request_timeout and hears the catalog change", async () => {
    const { state, stop } = await listen()
    // The behaviour under test is a duration: the stream is still open past request_timeout (1 s).
    await new Promise((done) => setTimeout(done, 1_500))
    expect(state.open).toBe(true)
    // An announcement the backend makes without changing anything: the gateway refetches (seen at the
    // backend) and finds the same catalog…
    const lists = () => backend.requests.filter((request) => request.body.includes('"tools/list"')).length
    const before = lists()
    backend.toolsChanged()
    await expect.poll(lists, { timeout: 3_000 }).toBeGreaterThan(before)
    // …then a real change, announced: exactly one announcement reaches the stream, so the first
    // refetch announced nothing (it would have come first).
    extra.push("fresh")
    backend.toolsChanged()
    await expect.poll(() => changes(state.heard), { timeout: 3_000 }).toBeGreaterThan(0)
    expect(changes(state.heard)).toBe(1)
    expect(state.open).toBe(true)
    await stop()
  })

  it("failed calls probe the backend at most once a second, and an unchanged catalog announces nothing", async () => {
    const { state, stop } = await listen()
    const before = backend.requests.length
    failWith = 503
    for (let n = 0; n < 6; n++) {
      expect(await callCode()).toBe(-32603)
    }
    await new Promise((done) => setTimeout(done, 400))
    const refetches = backend.requests.slice(before).filter((request) => request.body.includes('"tools/list"')).length
    expect(refetches).toBeGreaterThanOrEqual(1)
    expect(refetches).toBeLessThanOrEqual(2)
    expect(changes(state.heard)).toBe(0)
    failWith = undefined
    await stop()
  })

  it("a backend refusing one request (4xx) is not probed at all", async () => {
    await new Promise((done) => setTimeout(done, 1_100))
    const before = backend.requests.length
    failWith = 413
    expect(await callCode()).toBe(-32603)
    await new Promise((done) => setTimeout(done, 300))
    expect(backend.requests.slice(before).filter((request) => request.body.includes('"tools/list"'))).toHaveLength(0)
    failWith = undefined
  })
})
