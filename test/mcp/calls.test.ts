/**
 * Calls through the gateway: progress over a request-scoped SSE stream, cancellation and deadlines
 * reaching the backend as `notifications/cancelled`, a backend answering garbage or hanging, and the
 * guarantee that backends see only their own credentials (docs/mcp.md, "Backends").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alphaTools, startBackend, startLegacyBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

let alpha: TestBackend
let legacy: TestBackend
let broken: TestBackend
let gateway: TestGateway
let strict: TestGateway

const garbage = (body: unknown) => {
  const message = body as { method?: string; params?: { name?: string } } | undefined
  if (message?.method !== "tools/call" || message.params?.name !== "search") return undefined
  return new Response("{this is not json", { status: 200, headers: { "content-type": "application/json" } })
}

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  broken = await startBackend("broken", alphaTools, { intercept: garbage })
  legacy = await startLegacyBackend("legacy")
  const backends = [
    {
      id: "alpha",
      url: alpha.url,
      allow_insecure_http: true,
      headers: { "X-Api-Key": "fixed-key" },
      credentials: { type: "bearer", token: "backend-secret" },
      tool_rules: [{ tools: ["*"] }]
    },
    { id: "legacy", url: legacy.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
    {
      id: "broken",
      url: broken.url,
      allow_insecure_http: true,
      timeouts: { call: "400ms" },
      tool_rules: [{ tools: ["*"] }]
    }
  ]
  gateway = await startTestGateway({ patch: { backends } })
  strict = await startTestGateway({ patch: { backends, request_timeout: "700ms" } })
})
afterAll(async () => {
  await gateway?.close()
  await strict?.close()
  await alpha?.stop()
  await broken?.stop()
  await legacy?.stop()
})

const errorOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: Error & { code?: unknown }) => error
  )

/** How many `slow` calls `backend` has received: a call is in flight once this grows. */
const slowCalls = (backend: TestBackend) =>
  backend.requests.filter((request) => request.body.includes('"tools/call"') && request.body.includes('"slow"')).length

describe("calls through the gateway", () => {
  it("relays backend progress to the caller before the result (SSE)", async () => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const progress: Array<number> = []
    const result = await client.callTool(
      { name: "alpha__progress", arguments: { steps: 3 } },
      { onprogress: (update) => progress.push(update.progress) }
    )
    expect(result.content).toEqual([{ type: "text", text: "done 3" }])
    expect(progress).toEqual([1, 2, 3])
    await client.close()
  })

  // A 2026-07-28 backend learns of a cancellation by its request closing, and stops; a 2025-era one
  // is sent notifications/cancelled (this stateless 1.x test server cannot act on it, so only receipt is checked).
  it.each([
    ["2026-era backend", "alpha", () => alpha],
    ["2025-era backend", "legacy", () => legacy]
  ] as const)("a client that cancels cancels the call on a %s", async (_, id, backend) => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const controller = new AbortController()
    const received = slowCalls(backend())
    const call = errorOf(
      client.callTool({ name: `${id}__slow`, arguments: { ms: 10_000 } }, { signal: controller.signal })
    )
    await expect.poll(() => slowCalls(backend())).toBeGreaterThan(received)
    const before = backend().aborted.length
    controller.abort()
    expect(await call).toBeInstanceOf(Error)
    if (id === "alpha") await expect.poll(() => backend().aborted.length, { timeout: 5_000 }).toBeGreaterThan(before)
    else {
      const cancelled = () => backend().requests.some((request) => request.body.includes('"notifications/cancelled"'))
      await expect.poll(cancelled, { timeout: 5_000 }).toBe(true)
    }
    await client.close()
  })

  it("a notifications/cancelled from the caller cancels its call (2025-era clients send one)", async () => {
    const token = await gateway.token()
    const headers = { authorization: `Bearer ${token}` }
    const before = alpha.aborted.length
    const received = slowCalls(alpha)
    const call = rawPost(
      gateway.mcpUrl,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 77,
        method: "tools/call",
        params: { name: "alpha__slow", arguments: { ms: 10_000 } }
      }),
      headers
    )
    await expect.poll(() => slowCalls(alpha)).toBeGreaterThan(received)
    const cancel = await rawPost(
      gateway.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 77 } }),
      headers
    )
    expect(cancel.status).toBe(202)
    await expect.poll(() => alpha.aborted.length, { timeout: 5_000 }).toBeGreaterThan(before)
    await (await call).text()
  })

  // A 2026-07-28 client's call takes the gateway's direct path, a 2025-era one the SDK's (docs/mcp.md).
  it.each(["modern", "legacy"] as const)(
    "request_timeout ends a %s client's call with a JSON-RPC timeout error and cancels the backend call",
    async (era) => {
      const client = await connectClient(strict.mcpUrl, await strict.token(), era)
      const before = alpha.aborted.length
      const started = Date.now()
      const error = await errorOf(client.callTool({ name: "alpha__slow", arguments: { ms: 10_000 } }))
      expect(Date.now() - started).toBeLessThan(3_000)
      expect(error?.code).toBe(-32001)
      await expect.poll(() => alpha.aborted.length, { timeout: 5_000 }).toBeGreaterThan(before)
      await client.close()
    }
  )

  it.each(["modern", "legacy"] as const)(
    "a hanging backend hits its timeouts.call; garbage is an internal error; the gateway keeps serving (%s client)",
    async (era) => {
      const client = await connectClient(gateway.mcpUrl, await gateway.token(), era)
      const hanging = await errorOf(client.callTool({ name: "broken__slow", arguments: { ms: 10_000 } }))
      expect(hanging?.code).toBe(-32001)
      const bad = await errorOf(client.callTool({ name: "broken__search", arguments: { q: "x" } }))
      expect(bad?.code).toBe(-32603)
      expect(bad?.message).not.toContain("this is not json")
      const fine = await client.callTool({ name: "alpha__echo", arguments: { message: "still here" } })
      expect(fine.content).toEqual([{ type: "text", text: "still here" }])
      await client.close()
    }
  )

  it("backends receive their configured credentials and headers, never the caller's token", async () => {
    const token = await gateway.token()
    const client = await connectClient(gateway.mcpUrl, token)
    await client.callTool({ name: "alpha__echo", arguments: { message: "hi" } })
    await client.close()
    expect(alpha.requests.length).toBeGreaterThan(0)
    for (const request of alpha.requests) {
      expect(request.headers["authorization"]).toBe("Bearer backend-secret")
      expect(request.headers["x-api-key"]).toBe("fixed-key")
      expect(JSON.stringify(request.headers)).not.toContain(token)
      expect(request.body).not.toContain(token)
    }
  })
})
