/**
 * Logging (docs/mcp.md, "Logging"; issue: interoperability, "Logging"): the gateway advertises
 * `logging`, and log messages a backend sends during a `tools/call` reach the caller on that call's
 * stream — every one for a 2025-era caller (the gateway keeps no sessions for `logging/setLevel` to
 * configure), those at or above the request's level for a 2026-07-28 caller that names one (and the
 * level goes on to the backend), none for one that names none — on both /mcp paths.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let direct: TestGateway
let sdk: TestGateway

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  const patch = {
    backends: [
      { id: "alpha", url: alpha.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
    ]
  }
  direct = await startTestGateway({ patch })
  sdk = await startTestGateway({ patch, directPath: false })
})
afterAll(async () => {
  await direct?.close()
  await sdk?.close()
  await alpha?.stop()
})

const levels = ["debug", "info", "warning", "error"]

/** The SSE events of an answer, parsed. */
const events = async (response: Response) =>
  (await response.text())
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>)

const modernCall = async (gateway: TestGateway, meta: Record<string, unknown>) =>
  rawPost(
    gateway.mcpUrl,
    JSON.stringify({
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: {
        name: "alpha__chatty",
        arguments: { levels },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "logging-test", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": {},
          ...meta
        }
      }
    }),
    {
      authorization: `Bearer ${await gateway.token()}`,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "alpha__chatty"
    }
  )

const logged = (messages: ReadonlyArray<Record<string, unknown>>) =>
  messages
    .filter((message) => message["method"] === "notifications/message")
    .map((message) => (message["params"] as { level: string }).level)

describe.each([
  ["direct", () => direct],
  ["SDK", () => sdk]
] as const)("on the %s path", (_, gatewayOf) => {
  it("a 2025-era caller gets every log message of its call, in order, before the result", async () => {
    const client = await connectClient(gatewayOf().mcpUrl, await gatewayOf().token(), "legacy")
    expect(client.getServerCapabilities()?.logging).toEqual({})
    const received: Array<unknown> = []
    client.setNotificationHandler("notifications/message", (notification) => {
      received.push(notification.params)
    })
    const result = await client.callTool({ name: "alpha__chatty", arguments: { levels } })
    expect(result.content).toEqual([{ type: "text", text: "logged 4" }])
    expect(received).toEqual(levels.map((level) => ({ level, logger: "chatty", data: `a ${level} message` })))
    await client.close()
  })

  it("a 2026-07-28 caller naming a level gets the messages at or above it; the backend is told the level", async () => {
    const answer = await modernCall(gatewayOf(), { "io.modelcontextprotocol/logLevel": "warning" })
    const messages = await events(answer)
    expect(logged(messages)).toEqual(["warning", "error"])
    expect(messages.at(-1)).toMatchObject({ id: 5, result: { content: [{ type: "text", text: "logged 4" }] } })
    const sent = alpha.requests.filter(
      (request) => request.body.includes('"alpha__chatty"') || request.body.includes('"chatty"')
    )
    expect(sent.at(-1)?.body).toContain('"io.modelcontextprotocol/logLevel":"warning"')
  })

  it("a 2026-07-28 caller naming no level gets none", async () => {
    const answer = await modernCall(gatewayOf(), {})
    expect(logged(await events(answer).catch(() => []))).toEqual([])
  })
})
