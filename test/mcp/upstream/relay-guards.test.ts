/**
 * The bounds on relaying a 2025-era backend's requests to the caller (docs/mcp.md, "Input requests"),
 * against a backend that sends what an SDK server never would: a request the caller did not declare, a
 * request nested too deep, a request the caller leaves unanswered. A real stateful 2025-era server
 * written by hand (it answers each call's stream with one request of the test's choosing and then
 * reports the answer it got), the 1.x SDK client declaring sampling only.
 */
import type { ServerResponse } from "node:http"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Permissions } from "../../../src/policy/permissions.js"
import { PolicyWrites } from "../../../src/policy/writes.js"
import { GroupRepo } from "../../../src/store/groups.js"
import { grantAccess, testActor } from "../../support/grants.js"
import { LogCapture } from "../../support/logs.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"
import { json, type ScriptedServer, scriptedServer } from "../../support/scripted-server.js"

let backend: ScriptedServer
let gateway: TestGateway
const logs = new LogCapture()
/** What the gateway answered to each request the backend sent (by the backend's id). */
const answered = new Map<string, Record<string, unknown>>()
const streams = new Map<string, { readonly response: ServerResponse; readonly callId: unknown }>()
let sessions = 0
let asks = 0

beforeAll(async () => {
  backend = await scriptedServer((request, response) => {
    if (request.method !== "POST") return response.writeHead(405).end()
    const message = JSON.parse(request.body) as Record<string, unknown>
    const params = (message["params"] ?? {}) as Record<string, unknown>
    const id = message["id"]
    if (message["method"] === "initialize") {
      response.setHeader("mcp-session-id", `session-${++sessions}`)
      const result = {
        protocolVersion: params["protocolVersion"],
        capabilities: { tools: {} },
        serverInfo: { name: "asker", version: "1" }
      }
      return json(response, { jsonrpc: "2.0", id, result })
    }
    if (message["method"] === undefined) {
      // The gateway's answer to one of our requests: report it on the call's stream, which then ends.
      answered.set(String(id), message)
      response.writeHead(202).end()
      const stream = streams.get(String(id))
      streams.delete(String(id))
      const text = JSON.stringify(message["error"] ?? message["result"])
      const result = { content: [{ type: "text", text }] }
      stream?.response.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: stream.callId, result })}\n\n`)
      return
    }
    if (typeof message["method"] === "string" && message["method"].startsWith("notifications/")) {
      return response.writeHead(202).end()
    }
    if (message["method"] === "tools/list") {
      const tools = [{ name: "ask", inputSchema: { type: "object" } }]
      return json(response, { jsonrpc: "2.0", id, result: { tools } })
    }
    if (message["method"] !== "tools/call") {
      return json(response, { jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } })
    }
    const args = params["arguments"] as { method: string; params: unknown }
    const asked = `b-${++asks}`
    streams.set(asked, { response, callId: id })
    // "deep": params nested 70 levels, which no caller's arguments could carry through the gateway.
    const sent = args.params === "deep" ? JSON.parse(`${'{"a":'.repeat(70)}1${"}".repeat(70)}`) : args.params
    response.writeHead(200, { "content-type": "text/event-stream" })
    response.write(
      `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: asked, method: args.method, params: sent })}\n\n`
    )
  })
  gateway = await startTestGateway({
    logs,
    patch: {
      request_timeout: "2s",
      backends: [
        {
          id: "asker",
          url: `${backend.origin}/mcp`,
          allow_insecure_http: true,
          required: true,
          tool_rules: [{ tools: ["*"] }]
        }
      ]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await backend?.close()
})

const samplingClient = async (answer: () => Promise<unknown>, through: TestGateway = gateway, token?: string) => {
  const client = new Client({ name: "host", version: "1.0.0" }, { capabilities: { sampling: {} } })
  let asked = 0
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked++
    return (await answer()) as never
  })
  const bearer = token ?? (await through.token())
  await client.connect(
    new StreamableHTTPClientTransport(new URL(through.mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${bearer}` } }
    })
  )
  return { client, asked: () => asked }
}

const sample = { role: "assistant", model: "m", content: { type: "text", text: "ok" } }
const lastAnswer = () => answered.get(`b-${asks}`)

describe("a 2025-era backend's requests relayed to the caller, bounded", () => {
  it("a request the caller did not declare is declined with -32601 and logged; the caller is not asked", async () => {
    const { client, asked } = await samplingClient(async () => sample)
    const result = await client.callTool({ name: "asker__ask", arguments: { method: "roots/list", params: {} } })
    expect(lastAnswer()).toMatchObject({ error: { code: -32601, message: "Method not found" } })
    expect((result["content"] as Array<{ text: string }>)[0]?.text).toContain("-32601")
    expect(asked()).toBe(0)
    expect(logs.events("backend.input_refused")).toContainEqual(
      expect.objectContaining({ backend: "asker", method: "roots/list" })
    )
    await client.close()
  })

  it("a declared request is relayed and the caller's answer goes back to the backend", async () => {
    const { client, asked } = await samplingClient(async () => sample)
    await client.callTool({
      name: "asker__ask",
      arguments: { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } }
    })
    expect(lastAnswer()).toMatchObject({ jsonrpc: "2.0", id: `b-${asks}`, result: sample })
    expect(asked()).toBe(1)
    await client.close()
  })

  it("a request nested deeper than 64 levels is answered -32602 and never reaches the caller", async () => {
    const { client, asked } = await samplingClient(async () => sample)
    await client.callTool({ name: "asker__ask", arguments: { method: "sampling/createMessage", params: "deep" } })
    expect(lastAnswer()).toMatchObject({
      error: { code: -32602, message: "Invalid params: the request for input nests deeper than 64 levels" }
    })
    expect(asked()).toBe(0)
    await client.close()
  })

  it("a request the caller leaves unanswered ends at the call's deadline, and the backend is told", async () => {
    const { client } = await samplingClient(() => new Promise(() => {}))
    const started = performance.now()
    const outcome = await client
      .callTool({
        name: "asker__ask",
        arguments: { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } }
      })
      .then(
        (result) => (result["content"] as Array<{ text: string }>)[0]?.text,
        (error: Error & { code?: number }) => `${error.code}: ${error.message}`
      )
    expect(performance.now() - started).toBeLessThan(3_000)
    expect(outcome).toContain("-32001")
    // The backend learns the request will not be answered (the answer to it follows the call's own end).
    await expect.poll(() => lastAnswer()?.["error"], { timeout: 2_000 }).toMatchObject({ code: -32001 })
    await client.close()
  })
})

describe("a relayed request is decided by the policy like the call that caused it", () => {
  it("access withdrawn while the caller answers: the call ends withdrawn, and the caller is not asked again", async () => {
    const guarded = await startTestGateway({
      policy: "store",
      patch: {
        request_timeout: "3s",
        backends: [
          {
            id: "asker",
            url: `${backend.origin}/mcp`,
            allow_insecure_http: true,
            required: true,
            tool_rules: [{ tools: ["*"] }]
          }
        ]
      }
    })
    try {
      const { userId, groupId } = await guarded.run(grantAccess([{ endpoint_id: "asker", tools: ["ask"] }]))
      const token = await guarded.token({ subject: userId })
      const withdraw = () =>
        guarded.run(
          Effect.gen(function* () {
            const group = yield* (yield* GroupRepo).find(groupId)
            yield* (yield* PolicyWrites).updateGroup(testActor, groupId, group!.revision, {
              permissions: Schema.decodeUnknownSync(Permissions)({ access: [] })
            })
          })
        )
      const { client, asked } = await samplingClient(
        async () => {
          await withdraw()
          return sample
        },
        guarded,
        token
      )
      const outcome = await client
        .callTool({
          name: "asker__ask",
          arguments: { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } }
        })
        .then(
          () => "completed",
          (error: Error) => error.message
        )
      expect(outcome).toContain("access to it was withdrawn")
      expect(asked()).toBe(1)
      await client.close()
    } finally {
      await guarded.close()
    }
  })
})
