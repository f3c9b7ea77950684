/**
 * A hostile backend cannot take the gateway down (docs/mcp.md, "Backends"): a catalog past its bounds
 * (bytes of a list across its pages, items per list) fails that backend only; an index of more tools
 * than a spread could pass is built; a tool's `x-mcp-header` that is no header name stays out of the CORS
 * allow-list; a name listed twice is exposed once, an empty one not at all; a storm of `list_changed`
 * costs one catalog read every 2 s; a result nested too deep to
 * serialize is -32603; a call's stream carries a bounded amount of notifications. Real HTTP backends
 * written by hand (2025-era, stateless), a gateway in-process.
 */
import type { ServerResponse } from "node:http"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { stringify } from "yaml"
import { parseConfig } from "../../../src/config/load.js"
import { declaredParamHeaders } from "../../../src/mcp/catalog/backend-catalog.js"
import { buildIndex } from "../../../src/mcp/catalog/index.js"
import { MAX_CATALOG_ITEMS } from "../../../src/mcp/upstream/connection.js"
import { MAX_LIST_BYTES } from "../../../src/mcp/upstream/fetch.js"
import { jsonRpcOf, rawPost } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"
import { json, type ScriptedServer, scriptedServer } from "../../support/scripted-server.js"

type Answer = (message: Record<string, unknown>, response: ServerResponse) => boolean

/** A stateless 2025-era backend: `initialize` and notifications answered here, the rest by `answer`. */
const hostile = (answer: Answer, standing?: (response: ServerResponse) => void) =>
  scriptedServer((request, response) => {
    if (request.method === "GET") {
      // The standing stream, when the test gives one.
      if (standing !== undefined) standing(response)
      else response.writeHead(405).end()
      return
    }
    if (request.method !== "POST") return response.writeHead(405).end()
    const message = JSON.parse(request.body) as Record<string, unknown>
    const id = message["id"]
    if (message["method"] === "initialize") {
      const params = (message["params"] ?? {}) as Record<string, unknown>
      return json(response, {
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: params["protocolVersion"],
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: "hostile", version: "1" }
        }
      })
    }
    if (typeof message["method"] === "string" && message["method"].startsWith("notifications/")) {
      return response.writeHead(202).end()
    }
    if (answer(message, response)) return
    json(response, { jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } })
  })

const listsOf = (server: ScriptedServer) =>
  server.requests.filter((request) => request.body.includes('"tools/list"')).length

const echoTool = { name: "echo", inputSchema: { type: "object" } }

let paged: ScriptedServer
let many: ScriptedServer
let deep: ScriptedServer
let storm: ScriptedServer
let stormFrom = 0
let gateway: TestGateway

beforeAll(async () => {
  // Pages of 1 MiB each, linked by cursors without end: past MAX_LIST_BYTES the read fails.
  const filler = "x".repeat(1024 * 1024 - 200)
  paged = await hostile((message, response) => {
    if (message["method"] !== "tools/list") return false
    const page = Number((message["params"] as { cursor?: string } | undefined)?.cursor ?? 0)
    json(response, {
      jsonrpc: "2.0",
      id: message["id"],
      result: {
        tools: [{ name: `t${page}`, description: filler, inputSchema: { type: "object" } }],
        nextCursor: String(page + 1)
      }
    })
    return true
  })
  // More tools in one page than a list may hold.
  many = await hostile((message, response) => {
    if (message["method"] !== "tools/list") return false
    const tools = Array.from({ length: MAX_CATALOG_ITEMS + 1 }, (_, at) => ({ name: `t${at}`, inputSchema: {} }))
    json(response, { jsonrpc: "2.0", id: message["id"], result: { tools } })
    return true
  })
  // A result nested too deep to serialize; a stream of large log messages.
  deep = await hostile((message, response) => {
    const params = (message["params"] ?? {}) as { name?: string }
    if (message["method"] === "tools/list") {
      const tools = [
        { name: "nested", inputSchema: { type: "object" } },
        { name: "chatty", inputSchema: { type: "object" } },
        echoTool
      ]
      json(response, { jsonrpc: "2.0", id: message["id"], result: { tools } })
      return true
    }
    if (message["method"] !== "tools/call") return false
    if (params.name === "nested") {
      const text = `{"jsonrpc":"2.0","id":${JSON.stringify(message["id"])},"result":{"content":[],"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}}`
      response.writeHead(200, { "content-type": "application/json" }).end(text)
      return true
    }
    if (params.name === "chatty") {
      // Log messages of 4 MiB, back to back, then the answer: more than a call's notifications may be.
      response.writeHead(200, { "content-type": "text/event-stream" })
      const data = "y".repeat(4 * 1024 * 1024)
      for (let event = 0; event < 12; event++) {
        const log = { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data } }
        response.write(`event: message\ndata: ${JSON.stringify(log)}\n\n`)
      }
      const result = { content: [{ type: "text", text: "done" }] }
      response.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: message["id"], result })}\n\n`)
      return true
    }
    json(response, { jsonrpc: "2.0", id: message["id"], result: { content: [{ type: "text", text: "ok" }] } })
    return true
  })
  // `notifications/tools/list_changed` every 100 ms on the standing stream, for 3 s from `stormFrom`.
  storm = await hostile(
    (message, response) => {
      if (message["method"] !== "tools/list") return false
      json(response, { jsonrpc: "2.0", id: message["id"], result: { tools: [echoTool] } })
      return true
    },
    (response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      const timer = setInterval(() => {
        if (stormFrom === 0 || Date.now() < stormFrom) return
        if (Date.now() > stormFrom + 3_000) return clearInterval(timer)
        response.write(
          `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" })}\n\n`
        )
      }, 100)
      response.on("close", () => clearInterval(timer))
    }
  )
  const backend = (id: string, server: ScriptedServer) => ({
    id,
    url: `${server.origin}/mcp`,
    allow_insecure_http: true,
    tool_rules: [{ tools: ["*"] }]
  })
  gateway = await startTestGateway({
    patch: {
      request_timeout: "20s",
      backends: [backend("paged", paged), backend("many", many), backend("deep", deep), backend("storm", storm)]
    }
  })
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  for (const server of [paged, many, deep, storm]) await server?.close()
})

const call = async (name: string) => {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, arguments: {} } })
  const headers = { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${await gateway.token()}` }
  return jsonRpcOf(await rawPost(gateway.mcpUrl, body, headers))
}

const listed = async () => {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
  const headers = { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${await gateway.token()}` }
  const answer = await jsonRpcOf(await rawPost(gateway.mcpUrl, body, headers))
  return ((answer["result"] as { tools: Array<{ name: string }> }).tools ?? []).map((tool) => tool.name)
}

describe("a hostile backend fails alone", () => {
  it("a list larger than its bound across pages, or holding too many items, fails only that backend", async () => {
    // The read stopped at the page that passed MAX_LIST_BYTES, not at the client's 1,000 pages.
    expect(listsOf(paged)).toBeLessThanOrEqual(Math.ceil(MAX_LIST_BYTES / (1024 * 1024)) + 2)
    const names = await listed()
    expect(names.filter((name) => name.startsWith("paged__") || name.startsWith("many__"))).toEqual([])
    // The other backend serves.
    expect(names).toContain("deep__echo")
    expect(await call("deep__echo")).toMatchObject({ result: { content: [{ type: "text", text: "ok" }] } })
  })

  it("a result nested too deep to serialize is -32603, not a 500", async () => {
    expect(await call("deep__nested")).toMatchObject({
      error: { code: -32603, message: "The backend's answer could not be relayed: it is nested too deeply." }
    })
  })

  it("a call's stream may carry a bounded amount of notifications; past it the call fails", async () => {
    const answer = await call("deep__chatty")
    expect(answer["result"]).toBeUndefined()
    expect(answer).toMatchObject({ error: { code: -32603 } })
  })
})

describe("a storm of list_changed", () => {
  it("costs one catalog read every 2 s, not one after another", async () => {
    const before = listsOf(storm)
    stormFrom = Date.now()
    await new Promise((done) => setTimeout(done, 3_500))
    const reads = listsOf(storm) - before
    // 30 notifications in 3 s: the first read at once, then one every 2 s at most.
    expect(reads).toBeGreaterThanOrEqual(1)
    expect(reads).toBeLessThanOrEqual(3)
  })
})

describe("catalog index and header declarations", () => {
  const { config } = Either.getOrThrow(
    parseConfig(
      "gateway.yaml",
      stringify({
        server: { listen: "127.0.0.1:8080", public_url: "https://gw.example.com/mcp" },
        auth: { issuer: "https://gw.example.com/sso" },
        backends: [{ id: "big", url: "https://big.example.com/mcp", tool_rules: [{ tools: ["*"] }] }]
      }),
      {}
    )
  )

  it("an index of 130,000 tools is built (a spread of that many arguments overflowed the stack)", () => {
    const tools = Array.from({ length: 130_000 }, (_, at) => ({
      name: `t${at}`,
      inputSchema: { type: "object" as const }
    }))
    const index = buildIndex([
      { config: config.backends[0]!, catalog: { tools, prompts: [], resources: [], templates: [], completions: false } }
    ])
    expect(index.tools.length).toBeGreaterThanOrEqual(130_000)
  })

  it("a name the backend lists twice is exposed once (its first definition); an empty name not at all", () => {
    const tools = [
      { name: "echo", description: "first", inputSchema: { type: "object" as const } },
      { name: "echo", description: "second", inputSchema: { type: "object" as const } },
      { name: "", inputSchema: { type: "object" as const } }
    ]
    const index = buildIndex([
      { config: config.backends[0]!, catalog: { tools, prompts: [], resources: [], templates: [], completions: false } }
    ])
    expect(index.tools.map((tool) => [tool.key, tool.item.description])).toEqual([["big__echo", "first"]])
  })

  it("an x-mcp-header that is not a header name stays out of the allow-list", () => {
    const tool = (header: string) => ({
      name: "t",
      inputSchema: { type: "object" as const, properties: { a: { type: "string", "x-mcp-header": header } } }
    })
    expect(declaredParamHeaders(tool("Region"))).toEqual(["Mcp-Param-Region"])
    for (const header of ["X\r\nSet-Cookie: evil=1", "a, Cookie, X-Anything", "", "with space"]) {
      expect(declaredParamHeaders(tool(header)), JSON.stringify(header)).toEqual([])
    }
  })
})
