/**
 * Recovery that does not grow with the outage (docs/mcp.md, "Backends"): a call to a backend the gateway
 * holds unavailable starts a reconnect attempt at once, so calls succeed again within a second of the
 * backend listening, whether it was down 1 s, 5 s or long enough for the backoff to reach its 30 s cap.
 * The backend is a real 2025-era SDK 1.x server, killed (its listener and sessions gone) and started
 * again on the same port; /readyz follows it down and up.
 */
import { createServer, type Server, type Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import type { ReconnectTimingShape } from "../../../src/mcp/upstream/slot.js"
import { type ConformanceBackend2025, startConformanceBackend2025 } from "../../support/conformance-backend-2025.js"
import { LogCapture } from "../../support/logs.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms))

const setUp = async (reconnectTiming?: Partial<ReconnectTimingShape>) => {
  const backend: ConformanceBackend2025 = await startConformanceBackend2025()
  cleanup.push(() => backend.stop())
  const logs = new LogCapture()
  const gateway: TestGateway = await startTestGateway({
    logs,
    ...(reconnectTiming === undefined ? {} : { reconnectTiming }),
    patch: {
      // A catalog refresh far away: recovery must not wait for it.
      catalog: { refresh_interval: "1h" },
      backends: [
        { id: "srv", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
      ]
    }
  })
  cleanup.push(() => gateway.close())
  const client = await connectClient(gateway.mcpUrl, await gateway.token(), "legacy")
  cleanup.push(() => client.close())
  const call = () =>
    client.callTool({ name: "srv__test_simple_text", arguments: {} }).then(
      () => "answered",
      (error: Error) => error.message
    )
  const ready = async () => (await fetch(`${gateway.baseUrl}/readyz`)).status
  return { backend, gateway, logs, call, ready }
}

/** Kills the backend and waits until the gateway holds it unavailable (the first failed call tells it). */
const takeDown = async ({ backend, call, ready }: Awaited<ReturnType<typeof setUp>>) => {
  await backend.stop()
  expect(await call()).toMatch(/^Backend "srv" (failed to answer|is unavailable)\.$/)
  await expect.poll(ready, { timeout: 5_000 }).toBe(503)
  expect(await call()).toBe('Backend "srv" is unavailable.')
}

/** Starts the backend again and calls every 50 ms (as a client retrying would) until a call succeeds: how long it took. */
const bringBack = async ({ backend, call }: Awaited<ReturnType<typeof setUp>>) => {
  await backend.start()
  const listening = performance.now()
  while ((await call()) !== "answered") {
    if (performance.now() - listening > 10_000)
      throw new Error("no call succeeded within 10 s of the backend listening")
    await pause(50)
  }
  return performance.now() - listening
}

describe("a backend that was down", () => {
  it.each([1_000, 5_000])(
    "for %i ms: calls succeed within 1 s of it listening again; /readyz and the log follow",
    async (down) => {
      const setup = await setUp()
      expect(await setup.call()).toBe("answered")
      await takeDown(setup)
      await pause(down)
      const took = await bringBack(setup)
      console.info(`down ${down} ms: the first call succeeded ${Math.round(took)} ms after the backend listened`)
      expect(took).toBeLessThan(1_000)
      expect(await setup.ready()).toBe(200)
      expect(setup.logs.entries.filter((entry) => entry["msg"] === "backend unavailable")).toHaveLength(1)
      expect(setup.logs.entries.filter((entry) => entry["msg"] === "backend connected").length).toBeGreaterThanOrEqual(
        2
      )
    }
  )

  it("long enough for the backoff to reach its 30 s cap: calls succeed within 1 s of it listening again", async () => {
    // Every background attempt 30 s apart, as after an outage of half a minute or more: only the
    // attempts calls prompt can bring the backend back in time.
    const setup = await setUp({ delayMs: () => 30_000 })
    expect(await setup.call()).toBe("answered")
    await takeDown(setup)
    await pause(1_000)
    const took = await bringBack(setup)
    console.info(`backoff at 30 s: the first call succeeded ${Math.round(took)} ms after the backend listened`)
    expect(took, `the first call succeeded ${Math.round(took)} ms after the backend listened`).toBeLessThan(1_000)
    expect(await setup.ready()).toBe(200)
  })

  it("a flood of calls while it is down is a few attempts, not one per call", async () => {
    const setup = await setUp({ delayMs: () => 30_000 })
    expect(await setup.call()).toBe("answered")
    await takeDown(setup)
    // Down, but its port accepts and drops connections: each reconnect attempt shows up as connections.
    const sockets: Array<Socket> = []
    const counter: Server = createServer((socket) => {
      sockets.push(socket)
      socket.destroy()
    })
    await new Promise<void>((done) => counter.listen(setup.backend.port, "127.0.0.1", done))
    cleanup.push(() => new Promise<void>((done) => counter.close(() => done())))
    const started = performance.now()
    // 200 calls over about one second, 20 at a time.
    for (let round = 0; round < 10; round++) {
      const outcomes = await Promise.all(Array.from({ length: 20 }, setup.call))
      expect(outcomes.every((outcome) => outcome === 'Backend "srv" is unavailable.')).toBe(true)
      await pause(100)
    }
    await pause(300)
    const elapsed = performance.now() - started
    // At most one attempt per 250 ms (each may open a connection or two); 200 calls would be 200 otherwise.
    const attempts = Math.ceil(elapsed / 250) + 1
    console.info(`${sockets.length} connections from 200 calls over ${Math.round(elapsed)} ms`)
    expect(sockets.length).toBeGreaterThan(0)
    expect(sockets.length).toBeLessThanOrEqual(attempts * 2)
  })
})
