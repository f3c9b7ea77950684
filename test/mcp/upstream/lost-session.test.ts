/**
 * What is not a lost session (src/mcp/upstream/lost-session.ts; docs/mcp.md, "Backends that restart"):
 * - a 401 from a backend without OAuth credentials refuses the gateway's credentials, which a new
 *   session would not change: the call fails at once and is sent only once (the worker's probe still
 *   reconnects a backend that refuses it too, so the calls after it work);
 * - a 404 or 400 "session" answer from a backend that is up and still knows the session: the worker's
 *   probe finds it answering on that session, no new connection comes, and the caller is answered at
 *   once — not at `request_timeout`.
 * Real SDK servers (test/support/mcp-backends.ts), on both of the gateway's ways to a backend: the
 * channel (`tools/call`) and the MCP client (`prompts/get`).
 */
import { afterAll, describe, expect, it } from "vitest"
import { type LostSessionAnswer, type StatefulBackend, startStatefulBackend } from "../../support/mcp-backends.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

const setUp = async (answer: LostSessionAnswer, refuses?: (message: unknown) => boolean) => {
  const backend: StatefulBackend = await startStatefulBackend("keep", "2025-06-18", answer, refuses)
  cleanup.push(() => backend.stop())
  const gateway: TestGateway = await startTestGateway({
    patch: {
      // Far away, so a call that waited for it would show.
      request_timeout: "20s",
      catalog: { refresh_interval: "1h" },
      backends: [{ id: "keep", url: backend.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    }
  })
  cleanup.push(() => gateway.close())
  const client = await connectClient(gateway.mcpUrl, await gateway.token(), "legacy")
  cleanup.push(() => client.close())
  return { backend, gateway, client }
}

const sentOf = (backend: StatefulBackend, method: string) =>
  backend.requests.filter((request) => request.body.includes(`"${method}"`)).length

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: Error & { code?: number }) => ({ code: error.code, message: error.message })
  )

describe("a 401 from a backend without OAuth", () => {
  it("fails the call at once with -32603, sent once, on both ways to the backend", async () => {
    const { backend, client } = await setUp(401)
    await backend.restart()
    const calls = sentOf(backend, "tools/call")
    const started = Date.now()
    expect(await failure(client.callTool({ name: "keep__echo", arguments: { message: "x" } }))).toEqual({
      code: -32603,
      message: expect.stringContaining('Backend "keep" failed to answer.')
    })
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(sentOf(backend, "tools/call") - calls).toBe(1)
    // The failed call had the worker probe the backend: refused too, so it connects again (a new session).
    const echo = () =>
      client.callTool({ name: "keep__echo", arguments: { message: "y" } }).then(
        () => "answered",
        () => "failed"
      )
    await expect.poll(echo, { timeout: 5_000 }).toBe("answered")

    await backend.restart()
    const prompts = sentOf(backend, "prompts/get")
    const before = Date.now()
    expect(await failure(client.getPrompt({ name: "keep__hello", arguments: { who: "Ada" } }))).toEqual({
      code: -32603,
      message: expect.stringContaining('Backend "keep" failed to answer.')
    })
    expect(Date.now() - before).toBeLessThan(2_000)
    expect(sentOf(backend, "prompts/get") - prompts).toBe(1)
  })
})

describe.each([404, 400] as const)("a backend that is up but answers a call %s for its session", (answer) => {
  it("answers the caller as soon as the probe finds the backend up, well before request_timeout", async () => {
    const refused = (message: unknown) => {
      const { method, params } = (message ?? {}) as { method?: string; params?: { name?: string } }
      return (method === "tools/call" && params?.name === "search") || method === "prompts/get"
    }
    const { backend, client } = await setUp(answer, refused)
    const session = backend.sessions()
    const started = Date.now()
    expect(await failure(client.callTool({ name: "keep__search", arguments: { q: "x" } }))).toEqual({
      code: -32603,
      message: expect.stringContaining('Backend "keep" failed to answer.')
    })
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(await failure(client.getPrompt({ name: "keep__hello", arguments: { who: "Ada" } }))).toEqual({
      code: -32603,
      message: expect.stringContaining('Backend "keep" failed to answer.')
    })
    expect(Date.now() - started).toBeLessThan(8_000)
    // Nothing was sent again, no new session was opened, and the backend's other tools still answer.
    expect(sentOf(backend, "tools/call")).toBe(1)
    expect(sentOf(backend, "prompts/get")).toBe(1)
    expect(backend.sessions()).toEqual(session)
    expect((await client.callTool({ name: "keep__echo", arguments: { message: "up" } })).content).toEqual([
      { type: "text", text: "up" }
    ])
  })
})
