/**
 * Slow and idle connections against a spawned `gateway serve` (issue: hardening, items 1 and 3;
 * docs/operations.md, "Connections"): an answer sent while the body is unread closes the connection;
 * headers and whole requests are bounded by `request_timeout`; a slow body on any route is answered with
 * the error body; a flood of trickling connections from one address is refused while `/healthz` and
 * `/readyz` keep answering, and the process's descriptors return to where they were.
 */
import { readdirSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { Worker } from "node:worker_threads"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type GatewayProcess, startGateway } from "../support/gateway-process.js"

let gateway: GatewayProcess
let port: number

beforeAll(async () => {
  port = await freePort()
  gateway = await startGateway({
    port,
    config: (dir) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp", max_connections: 200 }
auth: { issuer: "http://127.0.0.1:${port}/sso" }
storage: { type: sqlite, path: "${dir}/gateway.db" }
request_timeout: 2s
`
  })
}, 30_000)
afterAll(async () => {
  await gateway?.stop()
})

/** A raw connection: what it received, and whether (and when) the gateway closed it. */
interface Raw {
  readonly socket: Socket
  received: string
  closedAt: number | undefined
  readonly closed: Promise<void>
}

const open = (first: string): Raw => {
  const socket = connect(port, "127.0.0.1")
  let markClosed: () => void = () => {}
  const raw: Raw = {
    socket,
    received: "",
    closedAt: undefined,
    closed: new Promise((done) => (markClosed = done))
  }
  socket.setEncoding("utf8")
  socket.on("connect", () => socket.write(first))
  socket.on("data", (chunk: string) => {
    raw.received += chunk
  })
  socket.on("error", () => {})
  socket.on("close", () => {
    raw.closedAt = Date.now()
    markClosed()
  })
  return raw
}

/** Sends one more byte every `everyMs` until the connection closes. */
const trickle = (raw: Raw, text: string, everyMs: number) => {
  const timer = setInterval(() => {
    if (raw.closedAt !== undefined || raw.socket.destroyed) return clearInterval(timer)
    raw.socket.write(text)
  }, everyMs)
  void raw.closed.then(() => clearInterval(timer))
}

const descriptors = () => readdirSync(`/proc/${gateway.child.pid}/fd`).length

/** What one probe got: its status, or 0 and why the request failed. */
interface ProbeResult {
  readonly path: string
  readonly status: number
  readonly error?: string
}

/**
 * Probes `/healthz` and `/readyz` in turn, each on a new connection, from a thread of its own until
 * `stop()`. A health checker is a client of its own: run on this thread, each probe's request would
 * wait behind the callbacks of the 2,000 flood sockets, and on a loaded machine reach the gateway a
 * quarter of a second or more after its connection, when a silent connection in the probe headroom may
 * be closed (src/runtime/connection-gate.ts) — the flood's own sockets, not the gateway, failing it.
 */
const startProbing = () => {
  const worker = new Worker(
    `
    const { parentPort, workerData } = require("node:worker_threads")
    let probing = true
    parentPort.once("message", () => (probing = false))
    const probe = (path) =>
      fetch("http://127.0.0.1:" + workerData.port + path, { headers: { connection: "close" } }).then(
        async (response) => {
          await response.arrayBuffer()
          return { path, status: response.status }
        },
        (error) => ({ path, status: 0, error: String(error.cause ?? error) })
      )
    ;(async () => {
      const results = []
      while (probing) {
        results.push(await probe("/healthz"), await probe("/readyz"))
        await new Promise((done) => setTimeout(done, 50))
      }
      parentPort.postMessage(results)
    })()
    `,
    { eval: true, workerData: { port } }
  )
  const results = new Promise<Array<ProbeResult>>((done, fail) => {
    worker.once("message", done)
    worker.once("error", fail)
  })
  return {
    stop: async () => {
      worker.postMessage("stop")
      const probes = await results
      await worker.terminate()
      return probes
    }
  }
}

const unreadMcpBody =
  "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"

describe("slow and idle connections", () => {
  it("an answer sent while the body is unread closes the connection at once (Connection: close)", async () => {
    const raw = open(unreadMcpBody)
    trickle(raw, " ", 200)
    const started = Date.now()
    await raw.closed
    expect(raw.received).toMatch(/^HTTP\/1\.1 401 /)
    expect(raw.received.toLowerCase()).toContain("connection: close")
    expect(raw.closedAt! - started).toBeLessThan(1_000)
  })

  it("a slow body on /sso routes is answered 504 with the error body at request_timeout, and logged as sent", async () => {
    for (const path of ["/sso/token", "/sso/login/local"]) {
      const from = gateway.stderr().length
      const raw = open(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nabc`
      )
      const started = Date.now()
      await raw.closed
      expect(raw.received).toMatch(/^HTTP\/1\.1 504 /)
      expect(raw.received).toContain('"error":"request_timeout"')
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_900)
      expect(Date.now() - started).toBeLessThan(4_000)
      await gateway.waitForLog(`"path":"${path}","status":504`, from)
    }
  })

  it("headers trickled byte by byte are cut off within request_timeout", async () => {
    const raw = open("GET /readyz HTTP/1.1\r\n")
    trickle(raw, "X", 300)
    const started = Date.now()
    await raw.closed
    // request_timeout is 2 s; Node checks every second.
    expect(Date.now() - started).toBeLessThan(4_500)
  })

  it("2,000 trickling connections from one address: probes keep answering, all are closed, descriptors return", async () => {
    const baseline = descriptors()
    const flood: Array<Raw> = []
    const prober = startProbing()
    for (let batch = 0; batch < 20; batch++) {
      for (let n = 0; n < 100; n++) {
        // Half send an unread body, half trickle their headers for ever.
        const raw = n % 2 === 0 ? open(unreadMcpBody) : open("POST /mcp HTTP/1.1\r\nHost: x\r\n")
        trickle(raw, n % 2 === 0 ? " " : "X", 500)
        flood.push(raw)
      }
      await new Promise((done) => setTimeout(done, 25))
    }
    const started = Date.now()
    await Promise.all(flood.map((raw) => raw.closed))
    const allClosedAfter = Date.now() - started
    const probes = await prober.stop()
    // Every one closed by the gateway within request_timeout (2 s) and Node's one-second check.
    expect(allClosedAfter).toBeLessThan(5_000)
    expect(probes.length).toBeGreaterThan(10)
    // With the reason of any failed request, should one fail.
    expect(probes.filter((probe) => probe.status !== 200)).toEqual([])
    // Those beyond max_connections that asked for something else were told why.
    const refused = flood.filter((raw) => raw.received.includes("too_many_connections"))
    const unauthorized = flood.filter((raw) => raw.received.startsWith("HTTP/1.1 401"))
    expect(unauthorized.length + refused.length).toBeGreaterThan(0)
    await expect.poll(descriptors, { timeout: 5_000 }).toBeLessThanOrEqual(baseline + 5)
  }, 60_000)
})
