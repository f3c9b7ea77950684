/**
 * The `fetch` the MCP client uses towards backends (src/mcp/upstream/fetch.ts), over the backend
 * channel's connections, and the headers the /mcp route hands to the SDK: what each must keep from the
 * web-standard contract it replaces.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sdkRequestHeaders } from "../../../src/mcp/edge/post.js"
import { AnswerBudget } from "../../../src/mcp/upstream/answer-budget.js"
import { makeBackendChannel } from "../../../src/mcp/upstream/channel.js"
import { makeBackendFetch } from "../../../src/mcp/upstream/fetch.js"

let server: Server
let base: string
const seen: Array<{ method: string; headers: IncomingMessage["headers"]; body: string }> = []
const sockets = new Set<unknown>()

const routes: Record<string, (response: ServerResponse) => void> = {
  "/json": (response) => response.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}'),
  "/moved": (response) => response.writeHead(307, { location: "/json" }).end(),
  "/accepted": (response) => response.writeHead(202).end(),
  "/events": (response) => {
    response.writeHead(200, { "content-type": "text/event-stream" })
    response.write('event: message\ndata: {"first":true}\n\n')
    // The second event never comes: a streamed body must not wait for the end.
  },
  "/hang": () => {},
  // Answers nothing, ever.
  "/blackhole": () => {},
  // A standing stream: 150 notifications at once, then (`/flood`) 1,000, and it stays open.
  "/stream": (response) => {
    response.writeHead(200, { "content-type": "text/event-stream" })
    response.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\n'.repeat(150))
    response.end()
  },
  "/flood": (response) => {
    response.writeHead(200, { "content-type": "text/event-stream" })
    response.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\n'.repeat(1_000))
  },
  // Events of 200 bytes in CR and CRLF lines, each event's end split between two writes a moment apart.
  "/split-ends": (response) => {
    response.writeHead(200, { "content-type": "text/event-stream" })
    const pieces = Array.from({ length: 12 }, (_, n) => [
      `data: {"n":${n},"pad":"${"x".repeat(180)}"}${n % 2 === 0 ? "\r" : "\r\n"}`,
      n % 2 === 0 ? "\r" : "\r\n"
    ]).flat()
    const next = () => {
      const piece = pieces.shift()
      if (piece === undefined) return response.end()
      response.write(piece)
      setTimeout(next, 2)
    }
    next()
  },
  // Many events, each small, far more than the limit in all; then one that never ends, in CRLF lines.
  "/many-events": (response) => {
    response.writeHead(200, { "content-type": "text/event-stream" })
    for (let n = 0; n < 20; n++) response.write(`event: message\r\ndata: {"n":${n},"pad":"${"x".repeat(200)}"}\r\n\r\n`)
    response.end()
  },
  "/endless-event": (response) => {
    response.writeHead(200, { "content-type": "text/event-stream" })
    response.write('event: message\n\ndata: {"pad":"')
    const timer = setInterval(() => response.write("x".repeat(256)), 5)
    response.on("close", () => clearInterval(timer))
  },
  // Bodies that never end: refusing them must close their connections, or they would be held forever.
  "/odd": (response) => response.writeHead(799, { "content-type": "application/json" }).write("{"),
  "/big": (response) => response.writeHead(200, { "content-type": "application/json" }).write(`"${"x".repeat(4096)}`),
  "/rpc": (response) =>
    response
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ jsonrpc: "2.0", id: JSON.parse(seen.at(-1)?.body ?? "{}").id, result: { ok: true } }))
}

/** A backend channel on the test server, and the MCP client's fetch over its connections. */
const opened = (maxAnswer?: number, answers?: AnswerBudget) => {
  const channel = makeBackendChannel({
    url: new URL(`${base}/rpc`),
    headers: {},
    tokens: undefined,
    session: () => ({ era: "legacy", protocolVersion: "2025-11-25", sessionId: undefined }),
    clientInfo: { name: "gateway", version: "test" }
  })
  return { fetch: makeBackendFetch(channel, maxAnswer, answers), channel, close: () => channel.close() }
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      seen.push({ method: request.method ?? "", headers: request.headers, body: Buffer.concat(chunks).toString() })
      routes[request.url ?? ""]?.(response)
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

describe("backend fetch", () => {
  it("sends method, headers and body, and reads a JSON answer whole over the channel's kept-alive connection", async () => {
    const { fetch, channel, close } = opened()
    const headers = new Headers({ "content-type": "application/json", "x-api-key": "fixed" })
    for (const id of [1, 2]) {
      const response = await fetch(`${base}/json`, { method: "POST", headers, body: `{"id":${id}}` })
      expect([response.status, response.headers.get("content-type")]).toEqual([200, "application/json"])
      expect(await response.json()).toEqual({ ok: true })
      // undici takes a finished connection back on the event loop's next turn.
      await new Promise((done) => setImmediate(done))
    }
    expect(seen.slice(-2).map((each) => [each.method, each.headers["x-api-key"], each.body])).toEqual([
      ["POST", "fixed", '{"id":1}'],
      ["POST", "fixed", '{"id":2}']
    ])
    // A forwarded call goes over the same connection: one set per backend, not one per client.
    const signal = new AbortController().signal
    expect(await channel.call("tools/call", { name: "x" }, "x", { signal, timeoutMs: 5_000 })).toEqual({
      ok: true,
      result: { ok: true }
    })
    expect(sockets.size).toBe(1)
    close()
    await expect.poll(() => sockets.size).toBe(0)
  })

  it("hands redirects back instead of following them, and gives bodiless answers a null body", async () => {
    const { fetch, close } = opened()
    const moved = await fetch(`${base}/moved`, { method: "POST", body: "{}" })
    expect([moved.status, moved.headers.get("location")]).toEqual([307, "/json"])
    const accepted = await fetch(`${base}/accepted`, { method: "POST", body: "{}" })
    expect(accepted.status).toBe(202)
    expect(moved.statusText).toBe("Temporary Redirect")
    close()
  })

  it("streams an event-stream answer, and the abort signal cancels a request in flight", async () => {
    const { fetch, close } = opened()
    const controller = new AbortController()
    const events = await fetch(`${base}/events`, { method: "POST", body: "{}", signal: controller.signal })
    const reader = events.body!.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toContain('"first":true')
    controller.abort()
    await expect(reader.read()).rejects.toThrow()

    const hanging = new AbortController()
    const pending = fetch(`${base}/hang`, { method: "POST", body: "{}", signal: hanging.signal })
    setTimeout(() => hanging.abort(), 50)
    await expect(pending).rejects.toThrow(/abort/i)
    close()
  })
  it("refuses a status a web Response cannot carry, and an answer past the size limit, closing its connection", async () => {
    const { fetch, close } = opened(1024)
    // The earlier tests' connections are gone first.
    await expect.poll(() => sockets.size).toBe(0)
    await expect(fetch(`${base}/odd`, { method: "POST", body: "{}" })).rejects.toThrow(
      "backend fetch: the backend answered with status 799"
    )
    await expect.poll(() => sockets.size).toBe(0)
    await expect(fetch(`${base}/big`, { method: "POST", body: "{}" })).rejects.toThrow(
      "backend fetch: the backend's answer is larger than 1024 bytes"
    )
    await expect.poll(() => sockets.size).toBe(0)
    expect(await (await fetch(`${base}/json`, { method: "POST", body: "{}" })).json()).toEqual({ ok: true })
    close()
  })

  it("streams an event-stream answer of many events past the size limit in all, but cuts one event past it, closing its connection", async () => {
    const { fetch, close } = opened(1024)
    await expect.poll(() => sockets.size).toBe(0)
    const endless = await fetch(`${base}/endless-event`, { method: "POST", body: "{}" })
    await expect(endless.text()).rejects.toThrow()
    await expect.poll(() => sockets.size).toBe(0)
    const many = await (await fetch(`${base}/many-events`, { method: "POST", body: "{}" })).text()
    expect(many.match(/event: message/g)).toHaveLength(20)
    close()
  })

  it("counts what it reads in the gateway-wide answer budget while it reads it, never refusing, and gives it all back", async () => {
    const answers = new AnswerBudget()
    // A budget already full for the channel's calls: this path counts, it does not refuse.
    const full = answers.hold(1)
    expect(full.to(1)).toBe(true)
    const { fetch, close } = opened(1024 * 1024, answers)
    expect(await (await fetch(`${base}/json`, { method: "POST", body: "{}" })).json()).toEqual({ ok: true })
    expect(answers.held).toBe(1)
    // An event still being received is held until the stream closes.
    const endless = await fetch(`${base}/endless-event`, { method: "POST", body: "{}" })
    const reader = endless.body!.getReader()
    await reader.read()
    await expect.poll(() => answers.held, { timeout: 2_000 }).toBeGreaterThan(1_000)
    await reader.cancel()
    await expect.poll(() => answers.held).toBe(1)
    full.release()
    close()
  })

  it("hands the client an event stream with LF line ends, and finds an event's end across two pieces of the stream", async () => {
    const { fetch, close } = opened(1024)
    const text = await (await fetch(`${base}/split-ends`, { method: "POST", body: "{}" })).text()
    expect(text).not.toContain("\r")
    expect(text).toBe(Array.from({ length: 12 }, (_, n) => `data: {"n":${n},"pad":"${"x".repeat(180)}"}\n\n`).join(""))
    close()
  })

  it("closes a standing (GET) event stream that carries more than 200 events a second, not one that carries fewer", async () => {
    const { fetch, close } = opened()
    await expect.poll(() => sockets.size).toBe(0)
    const calm = await (await fetch(`${base}/stream`, { method: "GET" })).text()
    expect(calm.match(/event: message/g)).toHaveLength(150)
    await expect.poll(() => sockets.size).toBeLessThanOrEqual(1)
    const flood = await fetch(`${base}/flood`, { method: "GET" })
    await expect(flood.text()).rejects.toThrow()
    close()
    await expect.poll(() => sockets.size).toBe(0)
  })

  it("sends the MCP client's answers to the backend's requests over the channel's few reply connections, and tells the client 202 at once", async () => {
    const { fetch, close } = opened()
    await expect.poll(() => sockets.size).toBe(0)
    const before = seen.length
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, id) =>
        fetch(`${base}/blackhole`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id, result: {} })
        })
      )
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 40 }, () => 202))
    // Unanswered, they hold 16 connections at most; the rest wait (or are dropped past 64).
    await expect.poll(() => seen.length - before).toBe(16)
    await new Promise((settle) => setTimeout(settle, 100))
    expect(sockets.size).toBe(16)
    close()
    await expect.poll(() => sockets.size).toBe(0)
  })
})

describe("the request the SDK sees", () => {
  it("carries the MCP headers but never the credentials", () => {
    const headers = sdkRequestHeaders({
      "content-type": "application/json",
      "mcp-protocol-version": "2026-07-28",
      authorization: "Bearer secret-token",
      cookie: "session=secret"
    })
    expect([...headers.keys()].sort()).toEqual(["content-type", "mcp-protocol-version"])
  })
})
