/**
 * A backend that restarts (issue: interoperability, item 1). Its sessions are gone, and servers say so
 * in three ways (src/mcp/upstream/lost-session.ts): 404, 400 with -32000 "No valid session ID" (the
 * reference `server-everything`), 401 (counted only for a backend with OAuth credentials, which the
 * gateway renews and sends again first). For each, a real restart of a real SDK server on the same port:
 * the next call — on the gateway's channel and on the MCP client's path — is sent once more on a new
 * session and succeeds; the failure is logged with its reason; and a backend that stays down turns
 * /readyz to 503 at once instead of after the catalog refresh.
 */
import { afterAll, describe, expect, it } from "vitest"
import { startBackendIssuer } from "../../support/backend-issuer.js"
import { LogCapture } from "../../support/logs.js"
import { type LostSessionAnswer, type StatefulBackend, startStatefulBackend } from "../../support/mcp-backends.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"
import { shiftedClock } from "../../support/shifted-clock.js"

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

const setUp = async (answer: LostSessionAnswer) => {
  const backend: StatefulBackend = await startStatefulBackend("keep", "2025-06-18", answer)
  cleanup.push(() => backend.stop())
  // A 401 means a lost session only for credentials the gateway renews: that backend signs in with OAuth.
  const issuer = answer === 401 ? await startBackendIssuer() : undefined
  if (issuer !== undefined) cleanup.push(() => issuer.stop())
  const logs = new LogCapture()
  const gateway: TestGateway = await startTestGateway({
    logs,
    patch: {
      // A catalog refresh far away: recovery must not wait for it.
      catalog: { refresh_interval: "1h" },
      backends: [
        {
          id: "keep",
          url: backend.url,
          allow_insecure_http: true,
          tool_rules: [{ tools: ["*"] }],
          ...(issuer === undefined ? {} : { oauth: issuer.oauth })
        }
      ]
    }
  })
  cleanup.push(() => gateway.close())
  return { backend, gateway, logs }
}

const calls = (backend: StatefulBackend) => backend.requests.filter((request) => request.body.includes('"tools/call"'))

describe.each([404, 400, 401] as const)("a backend that answers a forgotten session with %s", (answer) => {
  it("restarts: the next call is sent again on a new session and succeeds, on both of the gateway's paths", async () => {
    const { backend, gateway, logs } = await setUp(answer)
    const client = await connectClient(gateway.mcpUrl, await gateway.token(), "legacy")
    expect((await client.callTool({ name: "keep__echo", arguments: { message: "before" } })).content).toEqual([
      { type: "text", text: "before" }
    ])
    const oldSession = backend.sessions()[0]

    await backend.restart()
    const sentBefore = calls(backend).length
    const after = await client.callTool({ name: "keep__echo", arguments: { message: "after" } })
    expect(after.content).toEqual([{ type: "text", text: "after" }])
    const sent = calls(backend).slice(sentBefore)
    expect(sent[0]?.headers["mcp-session-id"]).toBe(oldSession)
    expect(backend.sessions()).toEqual([sent.at(-1)?.headers["mcp-session-id"]])
    // Sent again once on the new session; a 401 is first sent again with a renewed token, as for any 401.
    expect(sent).toHaveLength(answer === 401 ? 3 : 2)

    // The MCP client's path (a request with `_meta` of its own goes through the SDK).
    await backend.restart()
    const viaSdk = await client.callTool({
      name: "keep__echo",
      arguments: { message: "sdk" },
      _meta: { "com.example/trace": "t" }
    })
    expect(viaSdk.content).toEqual([{ type: "text", text: "sdk" }])

    // A prompt goes through the MCP client, which recognises the lost session the same way.
    await backend.restart()
    const prompt = await client.getPrompt({ name: "keep__hello", arguments: { who: "Ada" } })
    expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Hello Ada" })

    const failures = logs.events("backend.call_failed")
    expect(failures[0]).toMatchObject({
      level: "warn",
      backend: "keep",
      reason: `the backend no longer knows the session (HTTP ${answer})`
    })
    expect(logs.entries.filter((entry) => entry["msg"] === "backend connected").length).toBeGreaterThanOrEqual(3)
    await client.close()
  })
})

describe("a backend that stays down", () => {
  it("turns /readyz to 503 at the first failed call; its failures are logged once per 30 s window, then with a count", async () => {
    const clock = shiftedClock()
    const backend: StatefulBackend = await startStatefulBackend("keep", "2025-06-18", 404)
    cleanup.push(() => backend.stop())
    const logs = new LogCapture()
    const gateway = await startTestGateway({
      logs,
      clock: clock.clock,
      patch: {
        catalog: { refresh_interval: "1h" },
        backends: [
          { id: "keep", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
        ]
      }
    })
    cleanup.push(() => gateway.close())
    const client = await connectClient(gateway.mcpUrl, await gateway.token(), "legacy")
    const echo = () =>
      client.callTool({ name: "keep__echo", arguments: { message: "x" } }).then(
        () => "answered",
        (error: Error) => error.message
      )
    expect((await fetch(`${gateway.baseUrl}/readyz`)).status).toBe(200)

    await backend.stop()
    const outcomes = await Promise.all(Array.from({ length: 5 }, echo))
    const failed = outcomes.filter((outcome) => outcome === 'Backend "keep" failed to answer.').length
    expect(failed).toBeGreaterThan(0)
    expect(outcomes.every((outcome) => /^Backend "keep" (failed to answer|is unavailable)\.$/.test(outcome))).toBe(true)
    await expect.poll(async () => (await fetch(`${gateway.baseUrl}/readyz`)).status, { timeout: 5_000 }).toBe(503)
    expect(await echo()).toBe('Backend "keep" is unavailable.')
    expect(logs.events("backend.call_failed")).toEqual([
      expect.objectContaining({ backend: "keep", reason: "the backend could not be reached (ECONNREFUSED)" })
    ])

    // Back, then down again after the window: one more line, counting the failures not logged.
    await backend.start()
    await expect.poll(async () => (await fetch(`${gateway.baseUrl}/readyz`)).status, { timeout: 15_000 }).toBe(200)
    clock.advance(31_000)
    await backend.stop()
    // Calls racing the worker's own discovery of the stop either reach the backend and fail (then one
    // more line, counting the failures of the first window not logged), or find it unavailable (under
    // load the worker often learns first: nothing reached the backend, nothing more is logged).
    const again = await Promise.all(Array.from({ length: 5 }, echo))
    const reached = again.filter((outcome) => outcome === 'Backend "keep" failed to answer.').length
    const lines = logs.events("backend.call_failed")
    if (reached > 0) {
      expect(lines).toHaveLength(2)
      expect(lines[1]?.["failures_not_logged"] ?? 0).toBe(failed - 1)
    } else {
      expect(again.every((outcome) => outcome === 'Backend "keep" is unavailable.')).toBe(true)
      expect(lines).toHaveLength(1)
    }
    await client.close()
  }, 30_000)
})
