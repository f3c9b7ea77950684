/**
 * docs/operations.md, "Connections": above `server.max_connections` a small headroom is kept for health
 * probes; when it is full, a connection that has sent part of a request without completing it (a slow
 * one) makes room before a fresh connection that may be a probe about to ask.
 */
import { connect, createServer, type Server, type Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { ConnectionGate, PROBE_HEADROOM } from "../../src/runtime/connection-gate.js"

let server: Server | undefined
const clients: Array<Socket> = []
afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  await new Promise((done) => (server ? server.close(done) : done(undefined)))
  server = undefined
})

/** A server whose accepted sockets go through `gate`, in the order they connected. */
const listen = async (gate: ConnectionGate) => {
  const accepted: Array<Socket> = []
  server = createServer((socket) => {
    accepted.push(socket)
    gate.admit(socket)
  })
  await new Promise<void>((done) => server!.listen(0, "127.0.0.1", done))
  const port = (server.address() as { port: number }).port
  const open = async (first?: string) => {
    const before = accepted.length
    const client = connect(port, "127.0.0.1")
    client.on("error", () => {})
    clients.push(client)
    await new Promise((done) => client.once("connect", done))
    await expect.poll(() => accepted.length).toBe(before + 1)
    const socket = accepted[before]!
    if (first !== undefined) {
      client.write(first)
      await expect.poll(() => socket.bytesRead).toBeGreaterThan(0)
    }
    return socket
  }
  return open
}

/** The surplus is closed after the current turn's I/O. */
const turn = () => new Promise((done) => setImmediate(() => setImmediate(done)))

describe("ConnectionGate", () => {
  it("a young silent connection (a probe whose request is on its way) is kept past the headroom until its grace ends", async () => {
    const gate = new ConnectionGate(16, 60_000, 3_000)
    const open = await listen(gate)
    for (let n = 0; n < 16 + PROBE_HEADROOM; n++) await open()
    const opened = Date.now()
    const young = await open()
    await turn()
    expect(young.destroyed).toBe(false)
    // Once the grace is over the surplus goes, oldest first: one connection, not the young one.
    await new Promise((done) => setTimeout(done, Math.max(0, 3_300 - (Date.now() - opened))))
    expect(gate.openConnections).toBe(16 + PROBE_HEADROOM)
    expect(young.destroyed).toBe(false)
  })

  it("past the probe headroom the oldest connection that has sent part of a request is closed before an older silent one", async () => {
    // A long probe window: the test's own pace must not close anything; no grace for silent ones here.
    const gate = new ConnectionGate(16, 60_000, 0)
    const open = await listen(gate)
    for (let n = 0; n < 16; n++) expect(gate.probesOnly(await open())).toBe(false)
    const silent = await open()
    const trickling = await open("POST /mcp HTTP/1.1\r\nHost: x\r\n")
    expect(gate.probesOnly(silent)).toBe(true)
    expect(gate.probesOnly(trickling)).toBe(true)
    for (let n = 2; n < PROBE_HEADROOM; n++) await open()
    await turn()
    expect(trickling.destroyed).toBe(false)
    await open()
    await turn()
    expect(trickling.destroyed).toBe(true)
    expect(silent.destroyed).toBe(false)
    // With no slow one left, the oldest silent one goes.
    await open()
    await turn()
    expect(silent.destroyed).toBe(true)
    expect(gate.openConnections).toBe(16 + PROBE_HEADROOM)
  })
})
