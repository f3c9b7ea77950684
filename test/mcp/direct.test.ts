/**
 * The direct path of /mcp (docs/mcp.md, "How a request travels"): well-formed 2026-07-28 `tools/call` and
 * `tools/list` requests are answered by the gateway itself, everything else by the MCP SDK's handler. These
 * tests prove which path a request takes (the backend sees the channel's `gw-` request ids, or the SDK
 * client's numeric ones), that both paths answer alike, and that nothing the SDK would refuse slips through
 * the direct path.
 */
import type { McpServer } from "@modelcontextprotocol/server"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { stringify } from "yaml"
import * as z from "zod/v4"
import { parseConfig } from "../../src/config/load.js"
import { buildIndex } from "../../src/mcp/catalog/index.js"
import { directToolCall } from "../../src/mcp/edge/direct-call.js"
import { directToolList, ToolPages } from "../../src/mcp/edge/direct-list.js"
import { sdkProfile } from "../../src/mcp/edge/sdk-profile.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"
import { permitView } from "../support/permit-policy.js"

const profile = await sdkProfile()
const modern = profile.modernRevisions

const envelope = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

const call = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id: 7,
  method: "tools/call",
  params: { ...params, _meta: { ...envelope, ...(params["_meta"] as object | undefined) } },
  ...extra
})

const callHeaders = (name: string) => ({
  "mcp-protocol-version": "2026-07-28",
  "mcp-method": "tools/call",
  "mcp-name": name
})

describe("the tools/list page cache", () => {
  const text = stringify({
    server: { listen: "127.0.0.1:8080", public_url: "https://gw.example.com/mcp" },
    auth: { issuer: "https://gw.example.com/sso" },
    storage: { type: "sqlite", path: "unused.db" },
    backends: [{ id: "b", url: "https://b.example.com/mcp", tool_rules: [{ tools: ["*"] }] }]
  })
  const { config } = Either.getOrThrow(parseConfig("test.yaml", text, {}))
  const tools = ["t1", "t2", "t3", "t4", "t5"].map((name) => ({ name, inputSchema: { type: "object" as const } }))
  const catalog = { tools, prompts: [], resources: [], templates: [], completions: false }
  const index = buildIndex([{ config: config.backends[0]!, catalog }])
  const view = permitView(config.backends)

  it("keeps the pages of cursors it hands out, answers any other cursor without keeping it", () => {
    const pages = new ToolPages(2, profile.modernListTail)
    const first = JSON.parse(String(pages.result(index, view, undefined, "modern")!))
    expect(first.tools.map((tool: { name: string }) => tool.name)).toEqual(["b__t1", "b__t2"])
    const second = JSON.parse(String(pages.result(index, view, first.nextCursor, "legacy")!))
    expect(second.tools.map((tool: { name: string }) => tool.name)).toEqual(["b__t3", "b__t4"])
    expect(second.resultType).toBeUndefined()
    const held = pages.cachedBytes
    // Base64url decoding skips characters outside the alphabet: the same page under endless spellings.
    for (let n = 1; n <= 50; n++) {
      const junk = `${first.nextCursor}${"!".repeat(n)}`
      expect(JSON.parse(String(pages.result(index, view, junk, "modern")!)).tools).toHaveLength(2)
    }
    const foreign = Buffer.from(JSON.stringify({ after: "zzz-not-a-tool" })).toString("base64url")
    expect(JSON.parse(String(pages.result(index, view, foreign, "modern")!)).tools).toEqual([])
    expect(pages.cachedBytes).toBe(held)
    // A cursor that does not decode is the SDK's to answer (-32602 Invalid cursor).
    expect(pages.result(index, view, "%%%", "modern")).toBeUndefined()
  })
})

describe("which requests take the direct path", () => {
  it("a well-formed 2026-07-28 tools/call does, with its id, arguments, progress token and client capabilities", () => {
    const message = call({ name: "alpha__echo", arguments: { message: "hi" }, _meta: { progressToken: "p1" } })
    expect(directToolCall(message, callHeaders("alpha__echo"), modern)).toEqual({
      era: "modern",
      id: 7,
      name: "alpha__echo",
      arguments: { message: "hi" },
      progressToken: "p1",
      clientCapabilities: {}
    })
  })

  it("a 2026-07-28 retry with inputResponses and requestState does; a 2025-era one, or one of another shape, does not", () => {
    const retry = {
      name: "alpha__echo",
      arguments: {},
      inputResponses: { ok: { action: "accept" } },
      requestState: "s"
    }
    expect(directToolCall(call(retry), callHeaders("alpha__echo"), modern)).toMatchObject({
      inputResponses: { ok: { action: "accept" } },
      requestState: "s"
    })
    expect(directToolCall(call({ ...retry, requestState: 5 }), callHeaders("alpha__echo"), modern)).toBeUndefined()
    expect(directToolCall(call({ ...retry, inputResponses: [] }), callHeaders("alpha__echo"), modern)).toBeUndefined()
    const legacy = { jsonrpc: "2.0", id: "c", method: "tools/call", params: retry }
    const headers = { "mcp-protocol-version": "2025-11-25", accept: "application/json, text/event-stream" }
    expect(directToolCall(legacy, headers, modern)).toBeUndefined()
  })

  const legacyHeaders = {
    "mcp-protocol-version": "2025-11-25",
    accept: "application/json, text/event-stream"
  }
  const legacyCall = (meta?: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    id: "c1",
    method: "tools/call",
    params: { name: "alpha__echo", arguments: {}, ...(meta === undefined ? {} : { _meta: meta }) }
  })

  it("a 2025-era tools/call does, as the SDK's stateless fallback would serve it", () => {
    expect(directToolCall(legacyCall({ progressToken: 3 }), legacyHeaders, modern)).toEqual({
      era: "legacy",
      id: "c1",
      name: "alpha__echo",
      arguments: {},
      progressToken: 3
    })
    // Before `initialize` told it a version, a client may send none.
    expect(directToolCall(legacyCall(), { accept: legacyHeaders.accept }, modern)?.era).toBe("legacy")
  })

  it.each([
    ["an unsupported version header", { ...legacyHeaders, "mcp-protocol-version": "2024-01-01" }, undefined],
    [
      "a modern version header without the envelope",
      { ...legacyHeaders, "mcp-protocol-version": "2026-07-28" },
      undefined
    ],
    ["an Accept without SSE (the SDK answers 406)", { ...legacyHeaders, accept: "application/json" }, undefined],
    ["2026-07-28 headers on a 2025-era body", { ...legacyHeaders, "mcp-method": "tools/call" }, undefined],
    ["a _meta key besides progressToken", legacyHeaders, { "com.example/trace": "x" }],
    ["a fractional progress token", legacyHeaders, { progressToken: 0.5 }]
  ])("a 2025-era request with %s goes to the SDK's handler", (_, headers, meta) => {
    expect(directToolCall(legacyCall(meta), headers, modern)).toBeUndefined()
  })

  const good = call({ name: "alpha__echo", arguments: {} })
  it.each([
    ["Mcp-Name that does not mirror the body", good, callHeaders("alpha__search")],
    ["a missing Mcp-Method header", good, { "mcp-protocol-version": "2026-07-28", "mcp-name": "alpha__echo" }],
    [
      "a protocol-version header that disagrees",
      good,
      { ...callHeaders("alpha__echo"), "mcp-protocol-version": "2025-11-25" }
    ],
    [
      "an unknown revision",
      call({ name: "alpha__echo", _meta: { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } }),
      callHeaders("alpha__echo")
    ],
    [
      "an envelope without client capabilities",
      call({ name: "alpha__echo", _meta: { "io.modelcontextprotocol/clientCapabilities": "no" } }),
      callHeaders("alpha__echo")
    ],
    [
      "another reserved _meta key",
      call({ name: "alpha__echo", _meta: { "io.modelcontextprotocol/logLevel": "debug" } }),
      callHeaders("alpha__echo")
    ],
    ["a params key it does not know", call({ name: "alpha__echo", task: { ttl: 1 } }), callHeaders("alpha__echo")],
    ["arguments that are not an object", call({ name: "alpha__echo", arguments: [1] }), callHeaders("alpha__echo")],
    ["a name that needs the header's Base64 form", call({ name: "alpha__é" }), callHeaders("alpha__é")],
    ["a fractional id", call({ name: "alpha__echo" }, { id: 1.5 }), callHeaders("alpha__echo")],
    ["an extra top-level member", call({ name: "alpha__echo" }, { extra: true }), callHeaders("alpha__echo")],
    ["a notification (no id)", { ...call({ name: "alpha__echo" }), id: undefined }, callHeaders("alpha__echo")]
  ])("%s goes to the SDK's handler", (_, message, headers) => {
    expect(directToolCall(JSON.parse(JSON.stringify(message)), headers, modern)).toBeUndefined()
  })

  it("tools/list does only without Mcp-Name and with a string cursor", () => {
    const list = (params: Record<string, unknown>) => ({
      jsonrpc: "2.0",
      id: "l",
      method: "tools/list",
      params: { ...params, _meta: envelope }
    })
    const headers = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" }
    expect(directToolList(list({ cursor: "abc" }), headers, modern)).toEqual({ era: "modern", id: "l", cursor: "abc" })
    expect(directToolList(list({}), { ...headers, "mcp-name": "x" }, modern)).toBeUndefined()
    expect(directToolList(list({ cursor: 5 }), headers, modern)).toBeUndefined()
  })
})

/**
 * The backend answers `ask` with a 2026-07-28 multi-round-trip request for input, and `odd` with a result
 * whose keys are written as raw JSON: `__proto__` among them, in the result and in its `_meta`.
 */
const askForInput = (body: unknown) => {
  const message = body as { id?: unknown; method?: string; params?: { name?: string } } | undefined
  if (message?.method !== "tools/call") return undefined
  const answer = (text: string) => new Response(text, { headers: { "content-type": "application/json" } })
  if (message.params?.name === "odd") {
    return answer(
      `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"__proto__":{"polluted":true},` +
        `"content":[{"type":"text","text":"odd"}],"extra":1,"_meta":{"io.modelcontextprotocol/serverInfo":` +
        `{"name":"backend","version":"1"},"__proto__":{"inMeta":true},"com.example/kept":"yes"}}}`
    )
  }
  if (message.params?.name !== "ask") return undefined
  const result = {
    resultType: "input_required",
    inputRequests: { confirm: { method: "elicitation/create", params: {} } }
  }
  return answer(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }))
}

let alpha: TestBackend
let regional: TestBackend
let gateway: TestGateway
let patch: Record<string, unknown>

beforeAll(async () => {
  alpha = await startBackend(
    "alpha",
    (server, aborted) => {
      alphaTools(server, aborted)
      server.registerTool("ask", { inputSchema: z.object({}) }, async () => ({ content: [] }))
      server.registerTool("odd", { inputSchema: z.object({}) }, async () => ({ content: [] }))
      server.registerTool("links", { inputSchema: z.object({}) }, async () => ({
        content: [
          { type: "text", text: "see note://readme" },
          { type: "resource_link", uri: "note://readme", name: "readme" },
          { type: "resource", resource: { uri: "note://notes/1", text: "note 1" } }
        ]
      }))
    },
    { intercept: askForInput }
  )
  regional = await startBackend("regional", (server: McpServer) => {
    server.registerTool(
      "lookup",
      { inputSchema: z.object({ region: z.string().meta({ "x-mcp-header": "Region" }), q: z.string() }) },
      async ({ region, q }) => ({ content: [{ type: "text", text: `${region}:${q}` }] })
    )
    // A hostile backend: an output schema whose pattern backtracks, and a result that makes it (the
    // pattern is only in the listed schema: this backend's SDK checks the result with zod, without it).
    server.registerTool(
      "shape",
      {
        inputSchema: z.object({ region: z.string().meta({ "x-mcp-header": "Region" }) }),
        outputSchema: z.object({ s: z.string().meta({ pattern: "^(a+)+$" }) })
      },
      async () => ({ content: [], structuredContent: { s: `${"a".repeat(30)}!` } })
    )
  })
  const backends = [alpha, regional].map((backend, at) => ({
    id: at === 0 ? "alpha" : "regional",
    url: backend.url,
    allow_insecure_http: true,
    tool_rules: [{ tools: ["*"] }]
  }))
  // A short drain, so the generation test below need not wait the default 10 s for its call to be cut off.
  patch = { backends, drain_timeout: "100ms" }
  gateway = await startTestGateway({ patch })
})
afterAll(async () => {
  await gateway?.close()
  await alpha?.stop()
  await regional?.stop()
})

const lastCallId = (backend: TestBackend) => {
  const calls = backend.requests.map((request) => JSON.parse(request.body)).filter((m) => m.method === "tools/call")
  return calls.at(-1)?.id
}

describe("the direct path through the gateway", () => {
  it("every call goes over the channel, whichever path parsed it; the answers agree", async () => {
    const token = await gateway.token()
    const modern = await connectClient(gateway.mcpUrl, token, "modern")
    const legacy = await connectClient(gateway.mcpUrl, token, "legacy")
    const direct = await modern.callTool({ name: "alpha__echo", arguments: { message: "same" } })
    expect(lastCallId(alpha)).toMatch(/^gw-\d+$/)
    const legacyDirect = await legacy.callTool({ name: "alpha__echo", arguments: { message: "same" } })
    expect(lastCallId(alpha)).toMatch(/^gw-\d+$/)
    // A `_meta` key the direct path does not know sends the same call through the SDK.
    const unusual = {
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "alpha__echo", arguments: { message: "same" }, _meta: { "com.example/trace": "t" } }
    }
    const viaSdk = await jsonRpcOf(
      await rawPost(gateway.mcpUrl, JSON.stringify(unusual), {
        "mcp-protocol-version": "2025-11-25",
        authorization: `Bearer ${token}`
      })
    )
    // ToolCalls owns tools/call on both paths: the SDK's handler sends it over the same channel.
    expect(lastCallId(alpha)).toMatch(/^gw-\d+$/)
    expect(viaSdk).toEqual({ jsonrpc: "2.0", id: 9, result: { content: direct.content } })
    expect(legacyDirect.content).toEqual(direct.content)
    await modern.close()
    await legacy.close()
  })

  it("answers a 2025-era call in the 2025 shape: no result type, no 2026 _meta", async () => {
    const response = await rawPost(
      gateway.mcpUrl,
      JSON.stringify({
        jsonrpc: "2.0",
        id: "x",
        method: "tools/call",
        params: { name: "alpha__echo", arguments: { message: "m" } }
      }),
      { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${await gateway.token()}` }
    )
    expect(await jsonRpcOf(response)).toEqual({
      jsonrpc: "2.0",
      id: "x",
      result: { content: [{ type: "text", text: "m" }] }
    })
    expect(lastCallId(alpha)).toMatch(/^gw-/)
  })

  it("stamps the gateway's own identity and drops the backend's reserved _meta", async () => {
    const response = await rawPost(
      gateway.mcpUrl,
      JSON.stringify(call({ name: "alpha__echo", arguments: { message: "m" } })),
      { ...callHeaders("alpha__echo"), authorization: `Bearer ${await gateway.token()}` }
    )
    expect(response.status).toBe(200)
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const message = await jsonRpcOf(response)
    expect(message).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: {
        content: [{ type: "text", text: "m" }],
        resultType: "complete",
        _meta: { "io.modelcontextprotocol/serverInfo": { name: "gateway", version: expect.any(String) } }
      }
    })
  })

  it.each(["modern", "legacy"] as const)(
    "passes a result's own keys on as data, __proto__ included, and its _meta but the reserved keys (%s request)",
    async (era) => {
      const token = await gateway.token()
      const response = await rawPost(
        gateway.mcpUrl,
        JSON.stringify(
          era === "modern"
            ? call({ name: "alpha__odd", arguments: {} })
            : { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "alpha__odd", arguments: {} } }
        ),
        era === "modern"
          ? { ...callHeaders("alpha__odd"), authorization: `Bearer ${token}` }
          : { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
      )
      expect(lastCallId(alpha)).toMatch(/^gw-/)
      const text = await response.text()
      const json = text.startsWith("{") ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? "")
      // Own keys, not prototypes: the answer names them as it was given them.
      expect(json).toContain(`"__proto__":{"polluted":true}`)
      expect(json).toContain(`"__proto__":{"inMeta":true}`)
      const { result } = JSON.parse(json) as { result: Record<string, unknown> }
      expect(Object.hasOwn(result, "__proto__")).toBe(true)
      expect(result["extra"]).toBe(1)
      expect(result["content"]).toEqual([{ type: "text", text: "odd" }])
      const meta = result["_meta"] as Record<string, unknown>
      expect(meta["com.example/kept"]).toBe("yes")
      expect(Object.hasOwn(meta, "__proto__")).toBe(true)
      expect(meta["io.modelcontextprotocol/serverInfo"]).toEqual(
        era === "modern" ? { name: "gateway", version: expect.any(String) } : undefined
      )
      expect(Object.getPrototypeOf(result)).toBe(Object.prototype)
      expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
    }
  )

  it("a header that does not mirror the body is refused exactly as the SDK refuses it, and never reaches a backend", async () => {
    const before = alpha.requests.length
    const response = await rawPost(
      gateway.mcpUrl,
      JSON.stringify(call({ name: "alpha__echo", arguments: { message: "m" } })),
      {
        ...callHeaders("alpha__search"),
        authorization: `Bearer ${await gateway.token()}`
      }
    )
    expect(response.status).toBe(400)
    expect(((await jsonRpcOf(response))["error"] as { code: number }).code).toBe(-32020)
    expect(alpha.requests.length).toBe(before)
  })

  it("a tool that declares Mcp-Param headers is called through the SDK, which sends them to the backend", async () => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const result = await client.callTool({ name: "regional__lookup", arguments: { region: "eu-west", q: "x" } })
    expect(result.content).toEqual([{ type: "text", text: "eu-west:x" }])
    const sent = regional.requests.findLast((request) => request.body.includes('"tools/call"'))
    expect(sent?.headers["mcp-param-region"]).toBe("eu-west")
    expect(typeof JSON.parse(sent!.body).id).toBe("number")
    await client.close()
  })

  it("a backend's output schema is checked in linear time: a backtracking pattern cannot hold the gateway", async () => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    // 30 `a` and a `!` against ^(a+)+$ cost JavaScript's engine about 7 s, RE2 microseconds.
    const started = performance.now()
    const refused = await client.callTool({ name: "regional__shape", arguments: { region: "eu-west" } }).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(String(refused)).toContain("Structured content does not match the tool's output schema")
    expect(performance.now() - started).toBeLessThan(2_000)
    await client.close()
  })

  it("a call still running when its generation closes is answered 503 and cancelled at the backend", async () => {
    const token = await gateway.token()
    const before = alpha.aborted.length
    const pending = rawPost(gateway.mcpUrl, JSON.stringify(call({ name: "alpha__slow", arguments: { ms: 10_000 } })), {
      ...callHeaders("alpha__slow"),
      authorization: `Bearer ${token}`
    })
    await expect.poll(() => lastCallId(alpha)).toMatch(/^gw-/)
    await gateway.reload(patch)
    const response = await pending
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ error: "unavailable" })
    await expect.poll(() => alpha.aborted.length).toBeGreaterThan(before)
  })

  it.each([
    // The input_required result reaches the client, which cannot fulfil it (it declared no elicitation).
    ["modern", "CAPABILITY_NOT_SUPPORTED", "elicitation/create"],
    // The client declared no elicitation in `initialize` (its gateway session id says so), so the backend
    // was told it cannot be asked: the gateway refuses the request rather than ask it.
    ["legacy", -32603, 'asked for input with "elicitation/create", which the gateway does not relay']
  ] as const)(
    "a backend asking for more input: the %s client is asked, and its refusal ends the call; the backend stays in service",
    async (era, code, message) => {
      const client = await connectClient(gateway.mcpUrl, await gateway.token(), era)
      const error = await client.callTool({ name: "alpha__ask", arguments: {} }).then(
        () => undefined,
        (failure: Error & { code?: number | string }) => failure
      )
      expect(error?.code).toBe(code)
      expect(error?.message).toContain(message)
      // Not a backend failure: the backend stays in service.
      expect((await client.callTool({ name: "alpha__echo", arguments: { message: "ok" } })).content).toEqual([
        { type: "text", text: "ok" }
      ])
      await client.close()
    }
  )

  it("resource links and embedded resources in a result come back under exposed URIs, on every path", async () => {
    const token = await gateway.token()
    const expected = [
      { type: "text", text: "see note://readme" },
      { type: "resource_link", uri: "gateway://alpha/note://readme", name: "readme" },
      { type: "resource", resource: { uri: "gateway://alpha/note://notes/1", text: "note 1" } }
    ]
    for (const era of ["modern", "legacy"] as const) {
      const client = await connectClient(gateway.mcpUrl, token, era)
      expect((await client.callTool({ name: "alpha__links", arguments: {} })).content).toEqual(expected)
      // The exposed URI is one the gateway can read.
      const read = await client.readResource({ uri: "gateway://alpha/note://readme" })
      expect(read.contents[0]).toMatchObject({ uri: "gateway://alpha/note://readme", text: "alpha readme" })
      await client.close()
    }
    const viaSdk = await jsonRpcOf(
      await rawPost(
        gateway.mcpUrl,
        JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "alpha__links", arguments: {}, _meta: { "com.example/trace": "t" } }
        }),
        { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
      )
    )
    expect(viaSdk["result"]).toEqual({ content: expected })
  })

  it("tools/list is answered from cached pages per era and agrees with the SDK's answer", async () => {
    const token = await gateway.token()
    const modern = await connectClient(gateway.mcpUrl, token, "modern")
    const legacy = await connectClient(gateway.mcpUrl, token, "legacy")
    const first = await modern.listTools()
    const again = await modern.listTools()
    const legacyList = await legacy.listTools()
    expect(again.tools).toEqual(first.tools)
    expect(legacyList.tools).toEqual(first.tools)
    expect(first.tools.map((tool) => tool.name)).toContain("regional__lookup")
    const list = (meta?: Record<string, unknown>) =>
      rawPost(
        gateway.mcpUrl,
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/list",
          params: meta === undefined ? {} : { _meta: meta }
        }),
        { "mcp-protocol-version": "2025-11-25", authorization: `Bearer ${token}` }
      ).then(jsonRpcOf)
    // The same list through the SDK (a _meta key the direct path does not take) is the same document.
    expect(await list({ "com.example/trace": "t" })).toEqual(await list())
    await modern.close()
    await legacy.close()
  })
})
