/**
 * The direct path answers exactly as the MCP SDK's handler would (docs/mcp.md, "How a request
 * travels"). Every request shape of both protocol revisions is sent to two gateways over the same
 * backend — one with the direct path, one where every request takes the SDK's — and the answers must
 * be equal. An SDK upgrade that changes how it answers any of these fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let wide: TestBackend
let direct: TestGateway
let sdk: TestGateway

/** Tools whose text is beyond ASCII: a listing page's bytes are not its characters. */
const WIDE_TEXT = "Équipe Nord — 北 ✓ 🚀 \u2028 naïve"

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  wide = await startBackend("wide", (server) => {
    for (const name of ["cafe", "report"]) {
      server.registerTool(name, { title: WIDE_TEXT, description: `${WIDE_TEXT} (${name})` }, async () => ({
        content: [{ type: "text", text: WIDE_TEXT }]
      }))
    }
  })
  const patch = {
    catalog: { page_size: 2 },
    backends: [
      {
        id: "alpha",
        url: alpha.url,
        allow_insecure_http: true,
        required: true,
        tool_rules: [{ tools: ["*"] }, { tools: ["internal_*"], publish: false }]
      },
      { id: "wide", url: wide.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
    ]
  }
  direct = await startTestGateway({ patch })
  sdk = await startTestGateway({ patch, directPath: false })
})
afterAll(async () => {
  await direct?.close()
  await sdk?.close()
  await alpha?.stop()
  await wide?.stop()
})

const modernEnvelope = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "paths", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

interface Shape {
  readonly name: string
  readonly method: "tools/list" | "tools/call"
  /** Absent: the request has no `params` member at all (2025-era only: the 2026 envelope lives in params). */
  readonly params?: Record<string, unknown>
  /** `Mcp-Name` for a 2026-era call (the tool name when absent). */
  readonly mcpName?: string
  readonly id?: unknown
}

const cursorAfter = (key: string) => Buffer.from(JSON.stringify({ after: key })).toString("base64url")

const shapes: ReadonlyArray<Shape> = [
  { name: "tools/list, first page", method: "tools/list", params: {} },
  { name: "tools/list, no params member", method: "tools/list" },
  { name: "tools/call, no params member", method: "tools/call" },
  { name: "tools/list, an issued cursor", method: "tools/list", params: { cursor: cursorAfter("alpha__echo") } },
  { name: "tools/list, a cursor naming no tool", method: "tools/list", params: { cursor: cursorAfter("zzz") } },
  { name: "tools/list, a malformed cursor", method: "tools/list", params: { cursor: "%%%" } },
  { name: "tools/list, a string id", method: "tools/list", params: {}, id: "list-1" },
  {
    name: "tools/call, a tool with arguments",
    method: "tools/call",
    params: { name: "alpha__echo", arguments: { message: "hi" } }
  },
  { name: "tools/call, no arguments", method: "tools/call", params: { name: "alpha__echo" } },
  {
    name: "tools/call, arguments the tool refuses",
    method: "tools/call",
    params: { name: "alpha__echo", arguments: { message: 7 } }
  },
  { name: "tools/call, an unknown tool", method: "tools/call", params: { name: "alpha__nope", arguments: {} } },
  {
    name: "tools/call, an unpublished tool",
    method: "tools/call",
    params: { name: "alpha__internal_admin", arguments: {} }
  },
  { name: "tools/call, a tool of no backend", method: "tools/call", params: { name: "ghost__echo", arguments: {} } },
  {
    name: "tools/call, with a progress token",
    method: "tools/call",
    params: { name: "alpha__progress", arguments: { steps: 2 }, _meta: { progressToken: "p" } }
  },
  {
    name: "tools/call, arguments nested too deep",
    method: "tools/call",
    params: { name: "alpha__echo", arguments: JSON.parse(`${'{"a":'.repeat(70)}1${"}".repeat(70)}`) }
  }
]

const send = async (gateway: TestGateway, era: "modern" | "legacy", shape: Shape) => {
  const token = await gateway.token()
  const params = shape.params ?? {}
  const body =
    era === "modern" ? { ...params, _meta: { ...modernEnvelope, ...(params["_meta"] as object | undefined) } } : params
  const headers: Record<string, string> =
    era === "modern"
      ? {
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": shape.method,
          ...(shape.method === "tools/call" ? { "mcp-name": shape.mcpName ?? String(params["name"]) } : {})
        }
      : { "mcp-protocol-version": "2025-11-25" }
  const response = await rawPost(
    gateway.mcpUrl,
    JSON.stringify({
      jsonrpc: "2.0",
      id: shape.id ?? 1,
      method: shape.method,
      ...(shape.params === undefined && era === "legacy" ? {} : { params: body })
    }),
    { ...headers, authorization: `Bearer ${token}` }
  )
  return { status: response.status, message: await jsonRpcOf(response) }
}

describe.each(["modern", "legacy"] as const)("both /mcp paths answer every %s request shape alike", (era) => {
  it.each(shapes.map((shape) => [shape.name, shape] as const))("%s", async (_, shape) => {
    const fromDirect = await send(direct, era, shape)
    const fromSdk = await send(sdk, era, shape)
    expect(fromDirect).toEqual(fromSdk)
  })
})

describe("a listing page beyond ASCII", () => {
  it("is written with its length in bytes, and reads as the SDK's path writes it", async () => {
    const token = await direct.token()
    const headers = { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
    const pages: Array<Array<Record<string, unknown>>> = []
    let cursor: string | undefined
    do {
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: "wide",
        method: "tools/list",
        params: cursor ? { cursor } : {}
      })
      const response = await rawPost(direct.mcpUrl, body, headers)
      const bytes = Buffer.from(await response.arrayBuffer())
      expect(response.headers.get("content-type")).toBe("application/json")
      expect(Number(response.headers.get("content-length"))).toBe(bytes.length)
      const message = JSON.parse(bytes.toString("utf8")) as { result: Record<string, unknown> }
      pages.push(message.result["tools"] as Array<Record<string, unknown>>)
      cursor = message.result["nextCursor"] as string | undefined
    } while (cursor !== undefined)
    const wideTools = pages.flat().filter((tool) => String(tool["name"]).startsWith("wide__"))
    expect(wideTools.map((tool) => [tool["name"], tool["description"]])).toEqual([
      ["wide__cafe", `${WIDE_TEXT} (cafe)`],
      ["wide__report", `${WIDE_TEXT} (report)`]
    ])
    // The second request of each page comes from the cache: the same bytes again.
    const again = await rawPost(
      direct.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
      headers
    )
    const fromSdk = await rawPost(
      sdk.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
      { ...headers, authorization: `Bearer ${await sdk.token()}` }
    )
    expect(await jsonRpcOf(again)).toEqual(await jsonRpcOf(fromSdk))
  })
})

describe("the two gateways take different paths", () => {
  it("a 2025-era tools/list is answered as JSON by the direct path and streamed by the SDK's", async () => {
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
    const headers = { "mcp-protocol-version": "2025-11-25" }
    const fromDirect = await rawPost(direct.mcpUrl, list, {
      ...headers,
      authorization: `Bearer ${await direct.token()}`
    })
    const fromSdk = await rawPost(sdk.mcpUrl, list, { ...headers, authorization: `Bearer ${await sdk.token()}` })
    expect(fromDirect.headers.get("content-type")).toBe("application/json")
    expect(fromSdk.headers.get("content-type")).toContain("text/event-stream")
    expect(await jsonRpcOf(fromDirect)).toEqual(await jsonRpcOf(fromSdk))
  })

  it("a 2025-era tools/list without a params member (both SDKs send it so) takes the direct path too", async () => {
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
    const answer = await rawPost(direct.mcpUrl, list, {
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${await direct.token()}`
    })
    expect(answer.headers.get("content-type")).toBe("application/json")
    expect(((await jsonRpcOf(answer)) as { result: { tools: Array<unknown> } }).result.tools).toHaveLength(2)
  })
})
