/**
 * What the gateway relays of requests for input, and what it takes back (docs/mcp.md, "Input
 * requests"; "Request limits and errors"):
 * - a 2025-era caller that does not answer a request for input is answered at `request_timeout` with
 *   the request-timeout error (-32001), and told the request is cancelled;
 * - `inputResponses`, client capabilities and a 2025-era caller's answer that nest deeper than 64
 *   levels are refused with -32602, and nothing of them reaches the backend;
 * - a backend may ask a caller only for elicitation and sampling (what the gateway declared to it):
 *   anything else — `roots/list`, `tools/call` — is not relayed, the call fails, and it is logged.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { inputRequired } from "@modelcontextprotocol/server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { SseDecoder } from "../../src/mcp/sse.js"
import { LogCapture } from "../support/logs.js"
import { startBackend, type TestBackend } from "../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let backend: TestBackend
let gateway: TestGateway
const logs = new LogCapture()

/** `odd`'s answer: input_required asking the caller for `arguments.method` (which the SDK would not build). */
const oddInput = (body: unknown) => {
  const message = body as { id?: unknown; method?: string; params?: { name?: string; arguments?: { method?: string } } }
  if (message?.method !== "tools/call" || message.params?.name !== "odd") return undefined
  const result = {
    resultType: "input_required",
    inputRequests: { first: { method: message.params.arguments?.method, params: {} } },
    requestState: "odd-state"
  }
  return Response.json({ jsonrpc: "2.0", id: message.id, result })
}

beforeAll(async () => {
  backend = await startBackend(
    "desk",
    (server) => {
      server.registerTool("confirm", { inputSchema: z.object({ what: z.string() }) }, async ({ what }, ctx) => {
        if (ctx.mcpReq.inputResponses?.["ok"] === undefined) {
          return inputRequired({
            inputRequests: {
              ok: inputRequired.elicit({
                message: `Really ${what}?`,
                requestedSchema: { type: "object", properties: { sure: { type: "boolean" } } }
              })
            },
            requestState: `state-for-${what}`
          })
        }
        return { content: [{ type: "text", text: `${what}: answered` }] }
      })
      server.registerTool("odd", { inputSchema: z.object({ method: z.string() }) }, async () => ({ content: [] }))
    },
    { intercept: oddInput }
  )
  gateway = await startTestGateway({
    logs,
    patch: {
      request_timeout: "2s",
      backends: [
        { id: "desk", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await backend?.stop()
})

/** A 2025-era client that answers elicitation with `elicit` and roots/list with one root. */
const legacyClient = async (elicit: (signal: AbortSignal) => Promise<Record<string, unknown>>, roots = true) => {
  const token = await gateway.token()
  const client = new Client(
    { name: "asked", version: "1.0.0" },
    {
      capabilities: { elicitation: {}, ...(roots ? { roots: { listChanged: true } } : {}) },
      versionNegotiation: { mode: "legacy" }
    }
  )
  const asked: Array<string> = []
  client.setRequestHandler("elicitation/create", async (_request, ctx) => {
    asked.push("elicitation/create")
    return (await elicit(ctx.mcpReq.signal)) as never
  })
  if (roots) {
    client.setRequestHandler("roots/list", async () => {
      asked.push("roots/list")
      return { roots: [{ uri: "file:///home/someone" }] }
    })
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: { token: async () => token } })
  )
  return { client, asked }
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: Error & { code?: number }) => ({ code: error.code, message: error.message })
  )

const deep = (levels: number) => JSON.parse(`${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`) as unknown

const legs = (tool: string) => backend.requests.filter((request) => request.body.includes(`"${tool}"`)).length

describe("a 2025-era caller that does not answer a request for input", () => {
  it("is answered -32001 at request_timeout and told the request is cancelled", async () => {
    let cancelled = false
    const { client } = await legacyClient(
      (signal) =>
        new Promise((resolve) => {
          const done = () => resolve({ action: "cancel" })
          const timer = setTimeout(done, 10_000)
          signal.addEventListener("abort", () => {
            cancelled = true
            clearTimeout(timer)
            done()
          })
        })
    )
    const started = Date.now()
    expect(await failure(client.callTool({ name: "desk__confirm", arguments: { what: "wait" } }))).toEqual({
      code: -32001,
      message: expect.stringContaining(
        "The client did not answer the request for input in time; the call was cancelled."
      )
    })
    expect(Date.now() - started).toBeLessThan(4_000)
    await expect.poll(() => cancelled, { timeout: 3_000 }).toBe(true)
    await client.close()
  })
})

describe("input nested too deep", () => {
  const envelope = (capabilities: unknown) => ({
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": capabilities
  })
  const modernCall = async (params: Record<string, unknown>, capabilities: unknown = { elicitation: {} }) => {
    const body = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { ...params, _meta: envelope(capabilities) } }
    const response = await rawPost(gateway.mcpUrl, JSON.stringify(body), {
      authorization: `Bearer ${await gateway.token()}`,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "desk__confirm"
    })
    return (await jsonRpcOf(response))["error"]
  }

  it("2026-07-28 inputResponses and client capabilities deeper than 64 levels are -32602 and reach no backend", async () => {
    const before = legs("confirm")
    const retry = { name: "desk__confirm", arguments: { what: "x" }, requestState: "s" }
    expect(await modernCall({ ...retry, inputResponses: { ok: deep(100) } })).toEqual({
      code: -32602,
      message: "Invalid params: inputResponses nest deeper than 64 levels"
    })
    // 61 levels (inputResponses, then the 60 under `ok`) pass on: the backend answers the retry.
    expect(await modernCall({ ...retry, inputResponses: { ok: deep(60) } })).toBeUndefined()
    const afterShallow = legs("confirm")
    expect(await modernCall(retry, { elicitation: {}, experimental: deep(100) })).toEqual({
      code: -32602,
      message: "Invalid params: clientCapabilities nest deeper than 64 levels"
    })
    expect(afterShallow).toBe(before + 1)
    expect(legs("confirm")).toBe(afterShallow)
  })

  it("a 2025-era caller's answer deeper than 64 levels is refused -32602, and its call ends with that error", async () => {
    const authorization = `Bearer ${await gateway.token()}`
    const headers = { authorization, "mcp-protocol-version": "2025-11-25" }
    const call = {
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "desk__confirm", arguments: { what: "deep" } }
    }
    const before = legs("confirm")
    const response = await rawPost(gateway.mcpUrl, JSON.stringify(call), headers)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    // The call's stream: the request for input, then (after the answer) the call's own answer.
    const messages: Array<Record<string, unknown>> = []
    const decoder = new SseDecoder((data) => messages.push(JSON.parse(data) as Record<string, unknown>))
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    const next = async () => {
      while (messages.length === 0) {
        const { value, done } = await reader.read()
        if (done) throw new Error("the stream ended")
        decoder.push(value)
      }
      return messages.shift()!
    }
    const asked = await next()
    expect(asked).toMatchObject({ method: "elicitation/create", id: expect.stringMatching(/^gateway-input-/) })
    const answer = { jsonrpc: "2.0", id: asked["id"], result: { action: "accept", content: deep(100) } }
    const refused = await rawPost(gateway.mcpUrl, JSON.stringify(answer), headers)
    const tooDeep = {
      code: -32602,
      message: "Invalid params: the answer to the request for input nests deeper than 64 levels"
    }
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as Record<string, unknown>)["error"]).toEqual(tooDeep)
    expect(await next()).toEqual({ jsonrpc: "2.0", id: 9, error: tooDeep })
    // Only the first leg reached the backend.
    expect(legs("confirm")).toBe(before + 1)
  })
})

describe("a backend asking a caller for something the caller did not declare", () => {
  it.each(["roots/list", "tools/call"])("is not relayed (%s): the call fails and it is logged", async (method) => {
    // The caller declared elicitation only (in `initialize`, carried by the gateway's session id).
    const { client, asked } = await legacyClient(async () => ({ action: "accept", content: {} }), false)
    const before = legs("odd")
    expect(await failure(client.callTool({ name: "desk__odd", arguments: { method } }))).toEqual({
      code: -32603,
      message: expect.stringContaining(
        `Backend "desk" asked for input with "${method}", which the gateway does not relay.`
      )
    })
    expect(asked).toEqual([])
    expect(legs("odd")).toBe(before + 1)
    expect(logs.events("backend.input_refused")).toContainEqual(
      expect.objectContaining({ level: "warn", backend: "desk", method })
    )
    await client.close()
  })
})
