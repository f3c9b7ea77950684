/**
 * A 2025-era backend's requests to the client — sampling, elicitation, roots — in the middle of a call's
 * stream (docs/mcp.md, "Input requests"): relayed to the caller that made the call, over a backend
 * session that declared that caller's capabilities. Real parts on both ends: the 1.x SDK client with
 * handlers, through the gateway, to a 2025-era server on the 1.x SDK (test/support/conformance-backend-2025.ts),
 * which refuses by itself — its own "Client does not support …" — what a session's client did not declare.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  type ClientCapabilities,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConformanceBackend2025, startConformanceBackend2025 } from "../../support/conformance-backend-2025.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"

let backend: ConformanceBackend2025
let gateway: TestGateway

beforeAll(async () => {
  backend = await startConformanceBackend2025()
  gateway = await startTestGateway({
    patch: {
      request_timeout: "5s",
      backends: [
        { id: "srv", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await backend?.stop()
})

/** Requests the backend received: what each `initialize` declared. */
const declared = () =>
  backend.requests
    .filter((request) => request.body.includes('"initialize"'))
    .map((request) => (JSON.parse(request.body) as { params: { capabilities: unknown } }).params.capabilities)

const v1Client = async (capabilities: ClientCapabilities) => {
  const client = new Client({ name: "host", version: "1.0.0" }, { capabilities })
  const asked: Array<{ readonly method: string; readonly params?: unknown }> = []
  if (capabilities.sampling !== undefined) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      asked.push(request)
      return { role: "assistant", model: "test-model", content: { type: "text", text: "four" } }
    })
  }
  if (capabilities.elicitation !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request)
      return { action: "accept", content: { username: "ada", email: "ada@example.com" } }
    })
  }
  if (capabilities.roots !== undefined) {
    client.setRequestHandler(ListRootsRequestSchema, async (request) => {
      asked.push(request)
      return { roots: [{ uri: "file:///work/project", name: "project" }] }
    })
  }
  const token = await gateway.token()
  const transport = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } }
  })
  await client.connect(transport)
  return { client, asked, transport }
}

const textOf = (result: Record<string, unknown>) => (result["content"] as Array<{ text?: string }>)[0]?.text

describe("a 2025-era backend asking the caller during a call", () => {
  it("the 1.x client with sampling and elicitation handlers: a tool that samples and one that elicits complete", async () => {
    const { client, asked, transport } = await v1Client({ sampling: {}, elicitation: {} })
    // The gateway's session id carries what the client declared.
    expect(transport.sessionId).toMatch(/^g1\.[0-9a-v]+\.[0-9a-f]{24}$/)
    const sampled = await client.callTool({ name: "srv__test_sampling", arguments: { prompt: "2 + 2?" } })
    expect(textOf(sampled)).toBe("LLM response: four")
    const elicited = await client.callTool({ name: "srv__test_elicitation", arguments: { message: "Who?" } })
    expect(textOf(elicited)).toBe('User response: action=accept, content={"username":"ada","email":"ada@example.com"}')
    expect(asked.map((request) => request.method)).toEqual(["sampling/createMessage", "elicitation/create"])
    expect(asked[0]?.params).toMatchObject({ messages: [{ role: "user", content: { type: "text", text: "2 + 2?" } }] })
    expect(asked[1]?.params).toMatchObject({ message: "Who?" })
    // The backend was asked on a session of its own that declared both; the MCP client's declares none.
    expect(declared()).toContainEqual({ sampling: {}, elicitation: { form: {} } })
    expect(declared()).toContainEqual({})
    await client.close()
  })

  it("a client without those capabilities gets the backend's own refusal at once, not a hang", async () => {
    const { client, asked } = await v1Client({})
    const started = performance.now()
    const refusal = (name: string, args: Record<string, unknown>) =>
      client.callTool({ name, arguments: args }).then(
        (result) => textOf(result),
        (error: Error) => error.message
      )
    expect(await refusal("srv__test_sampling", { prompt: "x" })).toContain("Client does not support sampling")
    expect(await refusal("srv__test_elicitation", { message: "x" })).toContain(
      "Client does not support form elicitation"
    )
    expect(await refusal("srv__test_roots", {})).toContain("Client does not support listing roots")
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(asked).toEqual([])
    await client.close()
  })

  it("roots/list is relayed to a caller that declared roots, and its answer reaches the backend", async () => {
    const { client, asked } = await v1Client({ roots: { listChanged: true } })
    const listed = await client.callTool({ name: "srv__test_roots", arguments: {} })
    expect(textOf(listed)).toBe('Roots: [{"uri":"file:///work/project","name":"project"}]')
    expect(asked.map((request) => request.method)).toEqual(["roots/list"])
    // Declared without listChanged: the gateway relays no notifications into a shared backend session.
    expect(declared()).toContainEqual({ roots: {} })
    await client.close()
  })

  it("callers of one profile share its backend session, opened once", async () => {
    const first = await v1Client({ sampling: {} })
    const second = await v1Client({ sampling: {} })
    const before = declared().length
    await first.client.callTool({ name: "srv__test_sampling", arguments: { prompt: "a" } })
    await second.client.callTool({ name: "srv__test_sampling", arguments: { prompt: "b" } })
    // Opened once for the sampling profile (if not opened by an earlier test), never per caller.
    expect(declared().length - before).toBeLessThanOrEqual(1)
    expect(declared().filter((each) => JSON.stringify(each) === JSON.stringify({ sampling: {} }))).toHaveLength(1)
    expect(first.asked).toHaveLength(1)
    expect(second.asked).toHaveLength(1)
    await first.client.close()
    await second.client.close()
  })

  it("a backend that expired the profile's session while up: the call goes once more on a new one, no reconnect", async () => {
    const { client, asked } = await v1Client({ sampling: {}, elicitation: {}, roots: {} })
    expect(textOf(await client.callTool({ name: "srv__test_sampling", arguments: { prompt: "x" } }))).toBe(
      "LLM response: four"
    )
    const profile = JSON.stringify({ sampling: {}, elicitation: { form: {} }, roots: {} })
    const opened = (capabilities: string) => declared().filter((each) => JSON.stringify(each) === capabilities).length
    const [before, mainBefore] = [opened(profile), opened("{}")]
    await backend.forgetSessions()
    expect(textOf(await client.callTool({ name: "srv__test_sampling", arguments: { prompt: "y" } }))).toBe(
      "LLM response: four"
    )
    expect(asked).toHaveLength(2)
    // Opened again at once, on the same connection: the MCP client's own session was not renewed for it.
    expect(opened(profile)).toBe(before + 1)
    expect(opened("{}")).toBe(mainBefore)
    await client.close()
  })

  it("a backend that restarted and forgot the profile's session: the call goes once more on a new one", async () => {
    const { client, asked } = await v1Client({ sampling: {}, elicitation: {} })
    expect(textOf(await client.callTool({ name: "srv__test_sampling", arguments: { prompt: "x" } }))).toBe(
      "LLM response: four"
    )
    const both = JSON.stringify({ sampling: {}, elicitation: { form: {} } })
    const opened = () => declared().filter((each) => JSON.stringify(each) === both).length
    const before = opened()
    await backend.stop()
    await backend.start()
    expect(textOf(await client.callTool({ name: "srv__test_sampling", arguments: { prompt: "y" } }))).toBe(
      "LLM response: four"
    )
    expect(asked).toHaveLength(2)
    expect(opened()).toBe(before + 1)
    await client.close()
  })
})
