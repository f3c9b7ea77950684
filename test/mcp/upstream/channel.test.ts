/**
 * The channel forwarded calls take to a backend (src/mcp/upstream/channel.ts; docs/mcp.md, "How a
 * request travels"). Real SDK servers are tested through the gateway in calls.test.ts; here the
 * "backend" is a plain loopback HTTP server scripted per test, because the cases are what no MCP
 * server SDK produces on purpose: HTTP errors, garbage, oversized answers, a stream that ends without
 * an answer, a 401 that a fresh token cures, requests from the server in the middle of a stream.
 */
import { type AddressInfo, createServer, type Socket } from "node:net"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { PIECE_COST, SseDecoder } from "../../../src/mcp/sse.js"
import { AnswerBudget } from "../../../src/mcp/upstream/answer-budget.js"
import {
  type BackendChannel,
  type BackendSession,
  ChannelFailure,
  type ChannelSettings,
  makeBackendChannel
} from "../../../src/mcp/upstream/channel.js"
import { type LoopbackServer, serveLoopback } from "../../support/mcp-http.js"

type Script = (body: Record<string, unknown>, request: Request) => Response | Promise<Response>

let script: Script = () => new Response(null, { status: 500 })
let backend: LoopbackServer
const opened: Array<BackendChannel> = []

beforeAll(async () => {
  backend = await serveLoopback(async (request) => script((await request.json()) as Record<string, unknown>, request))
})
afterEach(() => {
  backend.requests.length = 0
})
afterAll(async () => {
  for (const each of opened) each.close()
  await backend.stop()
})

const modern: BackendSession = { era: "modern", protocolVersion: "2026-07-28", sessionId: undefined }
const legacy: BackendSession = { era: "legacy", protocolVersion: "2025-11-25", sessionId: "session-1" }

const channel = (session: BackendSession, extra: Partial<ChannelSettings> = {}) => {
  const made = makeBackendChannel({
    url: new URL(backend.url),
    headers: { "x-api-key": "fixed" },
    tokens: undefined,
    session: () => session,
    clientInfo: { name: "gateway", version: "test" },
    ...extra
  })
  opened.push(made)
  return made
}

const json = (message: unknown, status = 200) =>
  new Response(JSON.stringify(message), { status, headers: { "content-type": "application/json" } })

const sse = (events: ReadonlyArray<string>) =>
  new Response(events.join(""), { status: 200, headers: { "content-type": "text/event-stream" } })

const event = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`

const options = (extra: { timeoutMs?: number; signal?: AbortSignal } = {}) => ({
  signal: extra.signal ?? new AbortController().signal,
  timeoutMs: extra.timeoutMs ?? 5_000
})

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error
  )

/**
 * A backend written on raw sockets, for what node:http would tidy away (repeated headers, a body cut
 * short): `answer` gets each request's head and body once the body is in.
 */
const rawServer = async (answer: (socket: Socket, head: string, body: string) => void) => {
  const server = createServer((socket) => {
    let received = ""
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1")
      const end = received.indexOf("\r\n\r\n")
      if (end < 0) return
      const head = received.slice(0, end)
      const length = Number(/^content-length: (\d+)$/im.exec(head)?.[1] ?? 0)
      const body = received.slice(end + 4)
      if (body.length < length) return
      received = ""
      answer(socket, head, body)
    })
    socket.on("error", () => {})
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  const { port } = server.address() as AddressInfo
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), close: () => server.close() }
}

/** Renewable credentials, as OAuth gives them: `token-<n>`, n counting the renewals a 401 asked for. */
const renewingTokens = () => {
  const tokens = { issued: 0, token: async () => `token-${tokens.issued}`, invalidate: () => void tokens.issued++ }
  return tokens
}

/** A `tools/call` over a 2026-07-28 channel whose credentials renew after a 401. */
const callRenewing = (url: URL) =>
  channel(modern, { url, tokens: renewingTokens() }).call("tools/call", { name: "x" }, "x", options())

/** A raw 401 that promises 100 bytes of body and sends 6. */
const unfinishedRefusal = "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\ndenied"

/** The raw HTTP answer of an empty tool result to the JSON-RPC request `body`. */
const rawResult = (body: string) => {
  const answer = JSON.stringify({ jsonrpc: "2.0", id: JSON.parse(body).id, result: { content: [] } })
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${answer.length}\r\n\r\n${answer}`
}

const echoResult = (body: Record<string, unknown>) =>
  json({ jsonrpc: "2.0", id: body["id"], result: { content: [{ type: "text", text: "ok" }] } })

describe("the backend channel", () => {
  it("sends a 2026-07-28 request with the envelope and standard headers, and reads a JSON answer", async () => {
    script = echoResult
    const answer = await channel(modern).call("tools/call", { name: "söök", arguments: { q: 1 } }, "söök", options())
    expect(answer).toEqual({ ok: true, result: { content: [{ type: "text", text: "ok" }] } })
    const [sent] = backend.requests
    const body = JSON.parse(sent!.body)
    expect(body.params._meta).toEqual({
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "gateway", version: "test" },
      "io.modelcontextprotocol/clientCapabilities": {}
    })
    expect(sent!.headers["mcp-protocol-version"]).toBe("2026-07-28")
    expect(sent!.headers["mcp-method"]).toBe("tools/call")
    // Non-ASCII names travel in the header's Base64 form (SEP-2243).
    expect(sent!.headers["mcp-name"]).toBe(`=?base64?${Buffer.from("söök").toString("base64")}?=`)
    expect(sent!.headers["x-api-key"]).toBe("fixed")
    expect(sent!.headers["mcp-session-id"]).toBeUndefined()
  })

  it("sends a 2025-era request with the session id and no envelope", async () => {
    script = echoResult
    await channel(legacy).call("tools/call", { name: "echo" }, "echo", options())
    const [sent] = backend.requests
    expect(JSON.parse(sent!.body).params).toEqual({ name: "echo" })
    expect(sent!.headers["mcp-session-id"]).toBe("session-1")
    expect(sent!.headers["mcp-protocol-version"]).toBe("2025-11-25")
    expect(sent!.headers["mcp-method"]).toBeUndefined()
  })

  it("passes a JSON-RPC error through, including a 2026-07-28 backend's HTTP 400 with a JSON-RPC body", async () => {
    script = (body) =>
      json({ jsonrpc: "2.0", id: body["id"], error: { code: -32602, message: "bad q", data: { at: "q" } } }, 400)
    const answer = await channel(modern).call("tools/call", { name: "x" }, "x", options())
    expect(answer).toEqual({ ok: false, error: { code: -32602, message: "bad q", data: { at: "q" } } })
  })

  it("reads an SSE answer: progress for this call is relayed, a request from the backend is declined", async () => {
    script = (body) => {
      const token = (body["params"] as { _meta: { progressToken: string } })._meta.progressToken
      return sse([
        ": keep-alive comment\n\n",
        event({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1 } }),
        event({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "other", progress: 9 } }),
        event({ jsonrpc: "2.0", id: 41, method: "sampling/createMessage", params: {} }),
        event({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 2 } }),
        event({ jsonrpc: "2.0", id: body["id"], result: { content: [] } })
      ])
    }
    const progress: Array<unknown> = []
    const answer = await channel(legacy).call("tools/call", { name: "x" }, "x", {
      ...options(),
      onProgress: (update) => progress.push(update)
    })
    expect(answer).toEqual({ ok: true, result: { content: [] } })
    expect(progress).toEqual([{ progress: 1 }, { progress: 2 }])
    await expect
      .poll(() => backend.requests.map((request) => JSON.parse(request.body)).find((message) => message.id === 41))
      .toEqual({ jsonrpc: "2.0", id: 41, error: { code: -32601, message: "Method not found" } })
  })

  it("declines at most 32 requests from the backend during one call; the 33rd ends the call", async () => {
    script = (body) =>
      body["method"] === "tools/call"
        ? sse([
            ...Array.from({ length: 40 }, (_, at) =>
              event({ jsonrpc: "2.0", id: `b${at}`, method: "roots/list", params: {} })
            ),
            event({ jsonrpc: "2.0", id: body["id"], result: { content: [] } })
          ])
        : new Response(null, { status: 202 })
    const failure = await failureOf(channel(legacy).call("tools/call", { name: "x" }, "x", options()))
    expect((failure as ChannelFailure).message).toBe("the backend sent more than 32 requests during one call")
    const declined = () => backend.requests.filter((request) => "error" in JSON.parse(request.body)).length
    await expect.poll(declined).toBe(32)
    await new Promise((settle) => setTimeout(settle, 100))
    expect(declined()).toBe(32)
  })

  it("sends the messages it reads no answer to over connections of their own: unanswered, they hold at most replyConnections, and calls go on", async () => {
    const replySockets = new Set<Socket>()
    const server = await rawServer((socket, _head, body) => {
      const message = JSON.parse(body) as Record<string, unknown>
      if (message["method"] !== "tools/call") {
        // A decline, never answered.
        replySockets.add(socket)
        return
      }
      const stream = `${event({ jsonrpc: "2.0", id: `b-${String(message["id"])}`, method: "roots/list", params: {} })}${event({ jsonrpc: "2.0", id: message["id"], result: { content: [] } })}`
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${Buffer.byteLength(stream)}\r\n\r\n${stream}`
      )
    })
    try {
      const shared = channel(legacy, { url: server.url, replyConnections: 2 })
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 4 }, () => shared.call("tools/call", { name: "x" }, "x", options()))
        )
        expect(answers).toEqual(Array.from({ length: 4 }, () => ({ ok: true, result: { content: [] } })))
      }
      await expect.poll(() => replySockets.size).toBe(2)
      await new Promise((settle) => setTimeout(settle, 100))
      expect(replySockets.size).toBe(2)
    } finally {
      server.close()
    }
  })

  it("closes a message it sends and reads no answer to once replyTimeoutMs has passed, when the backend does not answer it or trickles its answer", async () => {
    const closed: Array<string> = []
    const server = await rawServer((socket, _head, body) => {
      const message = JSON.parse(body) as Record<string, unknown>
      if (message["method"] !== "tools/call") {
        // The gateway's reply: never finished (a byte every 50 ms); its connection is closed by the
        // gateway once the time allowed has passed in all, not left open while bytes keep coming.
        socket.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n")
        const trickle = setInterval(() => socket.write("1\r\nx\r\n"), 50)
        socket.once("close", () => {
          clearInterval(trickle)
          closed.push(String(message["id"]))
        })
        return
      }
      const stream = `${event({ jsonrpc: "2.0", id: "b1", method: "roots/list", params: {} })}${event({ jsonrpc: "2.0", id: message["id"], result: { content: [] } })}`
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${Buffer.byteLength(stream)}\r\n\r\n${stream}`
      )
    })
    try {
      const answer = await channel(legacy, { url: server.url, replyTimeoutMs: 200 }).call(
        "tools/call",
        { name: "x" },
        "x",
        options()
      )
      expect(answer).toEqual({ ok: true, result: { content: [] } })
      await expect.poll(() => closed, { timeout: 3_000 }).toEqual(["b1"])
    } finally {
      server.close()
    }
  })

  it.each([
    ["an HTTP 500", () => new Response("boom", { status: 500 })],
    ["a body that is not JSON", () => new Response("{nope", { headers: { "content-type": "application/json" } })],
    ["an answer to another id", () => json({ jsonrpc: "2.0", id: "someone-else", result: {} })],
    [
      "a result that is not an object",
      (body: Record<string, unknown>) => json({ jsonrpc: "2.0", id: body["id"], result: 7 })
    ],
    ["a stream that ends without the answer", () => sse([event({ jsonrpc: "2.0", method: "notifications/message" })])],
    ["an unexpected content type", () => new Response("<html>", { headers: { "content-type": "text/html" } })]
  ] as const)("treats %s as a failed call", async (_, answer) => {
    script = answer as Script
    const failure = await failureOf(channel(modern).call("tools/call", { name: "x" }, "x", options()))
    expect(failure).toBeInstanceOf(ChannelFailure)
    expect((failure as ChannelFailure).reason).toBe("failed")
    // The reason is safe to log: it never quotes the backend's body.
    expect((failure as ChannelFailure).message).not.toMatch(/boom|nope|<html>/)
  })

  it("refuses an answer larger than its limit, JSON or one SSE event, or an event of many empty data lines", async () => {
    const big = "x".repeat(4_096)
    for (const answer of [
      (body: Record<string, unknown>) => json({ jsonrpc: "2.0", id: body["id"], result: { big } }),
      (body: Record<string, unknown>) => sse([event({ jsonrpc: "2.0", id: body["id"], result: { big } })]),
      // 64 empty data lines: no characters to speak of, but each one held.
      () => sse(["data:\n".repeat(64)])
    ]) {
      script = answer
      const failure = await failureOf(
        channel(modern, { maxAnswer: 1_024 }).call("tools/call", { name: "x" }, "x", options())
      )
      expect((failure as ChannelFailure).message).toMatch(/too large/)
    }
  })

  it("a 401 drops the cached token and retries once with a fresh one; a second 401 fails", async () => {
    const tokens = renewingTokens()
    script = (body, request) =>
      request.headers.get("authorization") === "Bearer token-1" ? echoResult(body) : new Response(null, { status: 401 })
    const answer = await channel(modern, { tokens }).call("tools/call", { name: "x" }, "x", options())
    expect(answer.ok).toBe(true)
    expect(backend.requests.map((request) => request.headers["authorization"])).toEqual([
      "Bearer token-0",
      "Bearer token-1"
    ])
    script = () => new Response(null, { status: 401 })
    const failure = await failureOf(channel(modern, { tokens }).call("tools/call", { name: "x" }, "x", options()))
    expect((failure as ChannelFailure).reason).toBe("failed")
  })

  it("after a 401 renewed the token, the retried request is the one closed: at the deadline, and after its answer on a stream kept open", async () => {
    const tokens = renewingTokens()
    const closed: Array<string> = []
    const renewed = (answer: (body: Record<string, unknown>, request: Request) => Response | Promise<Response>) =>
      ((body, request) => {
        if (request.headers.get("authorization") !== `Bearer token-${tokens.issued}` || tokens.issued % 2 === 0) {
          return new Response(null, { status: 401 })
        }
        const token = request.headers.get("authorization") ?? ""
        request.signal.addEventListener("abort", () => closed.push(token))
        return answer(body, request)
      }) satisfies Script
    script = renewed(() => new Promise<Response>(() => {}))
    const timedOut = await failureOf(
      channel(modern, { tokens }).call("tools/call", { name: "x" }, "x", options({ timeoutMs: 200 }))
    )
    expect((timedOut as ChannelFailure).reason).toBe("timeout")
    await expect.poll(() => closed).toEqual(["Bearer token-1"])

    tokens.issued = 2
    script = renewed((body, request) => {
      const answer = new TextEncoder().encode(event({ jsonrpc: "2.0", id: body["id"], result: { content: [] } }))
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(answer)
          const timer = setInterval(() => controller.enqueue(new TextEncoder().encode(": keep-alive\n\n")), 50)
          request.signal.addEventListener("abort", () => clearInterval(timer))
        }
      })
      return new Response(stream, { headers: { "content-type": "text/event-stream" } })
    })
    expect((await channel(modern, { tokens }).call("tools/call", { name: "x" }, "x", options())).ok).toBe(true)
    await expect.poll(() => closed, { timeout: 3_000 }).toEqual(["Bearer token-1", "Bearer token-3"])
  })

  it("a deadline ends the call; a 2025-era backend is then sent notifications/cancelled for it", async () => {
    script = () => new Promise<Response>(() => {})
    const failure = await failureOf(channel(legacy).call("tools/call", { name: "x" }, "x", options({ timeoutMs: 100 })))
    expect((failure as ChannelFailure).reason).toBe("timeout")
    const callId = JSON.parse(backend.requests[0]!.body).id
    await expect
      .poll(() =>
        backend.requests.map((request) => JSON.parse(request.body)).find((m) => m.method === "notifications/cancelled")
      )
      .toMatchObject({ params: { requestId: callId } })
  })

  it("the caller's cancellation ends the call; a 2026-07-28 backend learns it from the request closing only", async () => {
    script = () => new Promise<Response>(() => {})
    const controller = new AbortController()
    const call = failureOf(
      channel(modern).call("tools/call", { name: "x" }, "x", options({ signal: controller.signal }))
    )
    await expect.poll(() => backend.requests.length).toBe(1)
    controller.abort()
    expect(((await call) as ChannelFailure).reason).toBe("cancelled")
    await new Promise((done) => setTimeout(done, 100))
    expect(backend.requests).toHaveLength(1)
  })

  it("a token Node cannot send as a header fails the call instead of the process", async () => {
    script = echoResult
    const tokens = { token: async () => "bad\r\nInjected: yes" }
    const failure = await failureOf(channel(modern, { tokens }).call("tools/call", { name: "x" }, "x", options()))
    expect((failure as ChannelFailure).reason).toBe("failed")
    expect(backend.requests).toHaveLength(0)
  })

  it("a stream kept open after its answer is answered at once, then closed, and nothing more is read", async () => {
    let closed = false
    script = (body, request) => {
      request.signal.addEventListener("abort", () => {
        closed = true
      })
      const answer = new TextEncoder().encode(event({ jsonrpc: "2.0", id: body["id"], result: { content: [] } }))
      const chatter = new TextEncoder().encode(event({ jsonrpc: "2.0", method: "notifications/message", params: {} }))
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(answer)
          const timer = setInterval(() => controller.enqueue(chatter), 50)
          request.signal.addEventListener("abort", () => clearInterval(timer))
        }
      })
      return new Response(stream, { headers: { "content-type": "text/event-stream" } })
    }
    const started = Date.now()
    expect(await channel(modern).call("tools/call", { name: "x" }, "x", options())).toEqual({
      ok: true,
      result: { content: [] }
    })
    expect(Date.now() - started).toBeLessThan(500)
    await expect.poll(() => closed, { timeout: 3_000 }).toBe(true)
  })

  it("a 4xx the backend refuses one request with is no reason to probe it; a 5xx or 404 is", async () => {
    for (const [status, probe] of [
      [413, false],
      [400, false],
      [404, true],
      [503, true]
    ] as const) {
      script = () => new Response("no", { status })
      const failure = await failureOf(channel(legacy).call("tools/call", { name: "x" }, "x", options()))
      expect([status, (failure as ChannelFailure).probe]).toEqual([status, probe])
    }
  })

  it("a 404 to a request that carried a session id says the session is gone (nothing ran); without one it does not", async () => {
    script = () => new Response("gone", { status: 404 })
    const lost = await failureOf(channel(legacy).call("tools/call", { name: "x" }, "x", options()))
    expect((lost as ChannelFailure).sessionLost).toBe(true)
    const plain = await failureOf(channel(modern).call("tools/call", { name: "x" }, "x", options()))
    expect((plain as ChannelFailure).sessionLost).toBe(false)
  })

  it("a character split between two reads of the answer arrives whole, JSON or SSE", async () => {
    const bytesOf = (body: Record<string, unknown>, sse: boolean) => {
      const message = { jsonrpc: "2.0", id: body["id"], result: { content: [{ type: "text", text: "söök 🚀" }] } }
      return new TextEncoder().encode(sse ? event(message) : JSON.stringify(message))
    }
    for (const sse of [false, true]) {
      script = (body) => {
        const bytes = bytesOf(body, sse)
        // Cut inside the four bytes of the rocket, and send the rest a moment later.
        const cut = bytes.indexOf(0xf0) + 2
        const stream = new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(bytes.slice(0, cut))
            await new Promise((done) => setTimeout(done, 30))
            controller.enqueue(bytes.slice(cut))
            controller.close()
          }
        })
        return new Response(stream, { headers: { "content-type": sse ? "text/event-stream" : "application/json" } })
      }
      expect(await channel(modern).call("tools/call", { name: "x" }, "x", options())).toEqual({
        ok: true,
        result: { content: [{ type: "text", text: "söök 🚀" }] }
      })
    }
  })

  it("a call on a closed channel fails at once, and sends nothing", async () => {
    script = echoResult
    const closed = channel(modern)
    expect((await closed.call("tools/call", { name: "x" }, "x", options())).ok).toBe(true)
    closed.close()
    const failure = await failureOf(closed.call("tools/call", { name: "x" }, "x", options()))
    expect((failure as ChannelFailure).message).toBe("the backend could not be reached (UND_ERR_DESTROYED)")
    expect(backend.requests).toHaveLength(1)
  })

  it("a 401 whose body breaks off after the retry went out does not fail the retried call", async () => {
    const server = await rawServer((socket, head, body) => {
      if (/^authorization: Bearer token-0$/im.test(head)) {
        // The connection breaks while the retry waits.
        socket.write(unfinishedRefusal)
        setTimeout(() => socket.destroy(), 30)
        return
      }
      setTimeout(() => socket.end(rawResult(body)), 150)
    })
    try {
      const answer = await callRenewing(server.url)
      expect(answer).toEqual({ ok: true, result: { content: [] } })
    } finally {
      server.close()
    }
  })

  it("a 401 whose body never ends is closed a moment after the retry went out", async () => {
    let refusals = 0
    let refusalClosed = false
    const server = await rawServer((socket, head, body) => {
      if (/^authorization: Bearer token-0$/im.test(head)) {
        refusals++
        socket.once("close", () => {
          refusalClosed = true
        })
        socket.write(unfinishedRefusal)
        return
      }
      socket.write(rawResult(body))
    })
    try {
      const answer = await callRenewing(server.url)
      expect(answer).toEqual({ ok: true, result: { content: [] } })
      expect(refusals).toBe(1)
      await expect.poll(() => refusalClosed, { timeout: 3_000 }).toBe(true)
    } finally {
      server.close()
    }
  })

  it("reads the answer's Content-Type and Content-Length whatever their case; of a repeated header the first counts", async () => {
    const result = JSON.stringify({ jsonrpc: "2.0", id: "", result: { content: [{ type: "text", text: "ok" }] } })
    const server = await rawServer((socket, _head, body) => {
      const answer = result.replace('"id":""', `"id":${JSON.stringify(JSON.parse(body).id)}`)
      socket.write(
        "HTTP/1.1 200 OK\r\nCONTENT-TYPE: Application/JSON; charset=utf-8\r\ncontent-type: text/plain\r\n" +
          `Content-Length: ${answer.length}\r\n\r\n${answer}`
      )
    })
    try {
      const answer = await channel(modern, { url: server.url }).call("tools/call", { name: "x" }, "x", options())
      expect(answer).toEqual({ ok: true, result: { content: [{ type: "text", text: "ok" }] } })
    } finally {
      server.close()
    }
    // The other way round, the first says text/plain: not a JSON answer.
    const plain = await rawServer((socket) => {
      socket.write(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nContent-Type: application/json\r\ncontent-length: 2\r\n\r\n{}"
      )
    })
    try {
      const failure = await failureOf(
        channel(modern, { url: plain.url }).call("tools/call", { name: "x" }, "x", options())
      )
      expect(failure).toBeInstanceOf(ChannelFailure)
      expect((failure as ChannelFailure).message).toBe("the backend answered HTTP 200 (text/plain)")
    } finally {
      plain.close()
    }
  })

  it("holds an answer's declared Content-Length against the budget before reading it, whatever the header's case", async () => {
    const server = await rawServer((socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nCONTENT-LENGTH: 5000\r\n\r\n{")
    })
    try {
      const answers = new AnswerBudget()
      const made = channel(modern, { url: server.url, budget: { answers, limit: 4096 } })
      const failure = await failureOf(made.call("tools/call", { name: "x" }, "x", options()))
      expect(failure).toBeInstanceOf(ChannelFailure)
      expect((failure as ChannelFailure).reason).toBe("over_budget")
      expect(answers.held).toBe(0)
    } finally {
      server.close()
    }
  })

  it("an unreachable backend is a failed call, not a hang", async () => {
    const down = channel(modern, { url: new URL("http://127.0.0.1:1/mcp") })
    const failure = await failureOf(down.call("tools/call", { name: "x" }, "x", options()))
    expect((failure as ChannelFailure).reason).toBe("failed")
    expect((failure as ChannelFailure).message).toBe("the backend could not be reached (ECONNREFUSED)")
  })
})

describe("the SSE decoder", () => {
  it("splits events across chunk boundaries and CRLF lines, joins multi-line data, skips other event types", () => {
    const seen: Array<string> = []
    const decoder = new SseDecoder((data) => seen.push(data))
    for (const chunk of [
      'data: {"a"',
      ":1}\r\n\r\nevent: ping\ndata: skipped\n\n",
      "data: line one\ndata: line two\n",
      "\n: comment\n\n"
    ]) {
      decoder.push(chunk)
    }
    expect(seen).toEqual(['{"a":1}', "line one\nline two"])
    decoder.push("data: unfinished")
    expect(decoder.pending).toBe("data: unfinished".length + PIECE_COST)
  })

  it("finds a line that comes one character at a time, and counts what it holds: the chunks its strings are slices of, and each piece and data line beyond its characters", () => {
    const seen: Array<string> = []
    const decoder = new SseDecoder((data) => seen.push(data))
    const line = `data: ${"x".repeat(500)}`
    for (const character of line) decoder.push(character)
    expect(decoder.pending).toBe(line.length * (1 + PIECE_COST))
    decoder.push("\r")
    // The line ends at its CR: held once, as the string joined from its pieces, and the chunk "\r".
    expect(decoder.pending).toBe(line.length + (1 + PIECE_COST))
    // The LF of that CRLF, in the next chunk, ends nothing more.
    decoder.push("\n")
    expect(decoder.pending).toBe(line.length + (1 + PIECE_COST))
    // Empty data lines hold almost nothing each, yet each counts: a stream of them reaches the caller's bound.
    const empties = "data:\n".repeat(1_000)
    decoder.push(empties)
    expect(decoder.pending).toBe(line.length + (1 + PIECE_COST) + empties.length + 1_000 * PIECE_COST)
    decoder.push("\n")
    expect(seen).toEqual([`${"x".repeat(500)}${"\n".repeat(1_000)}`])
    expect(decoder.pending).toBe(0)
  })

  it("ends lines at CRLF, LF or a lone CR, a CRLF cut between chunks ending one line", () => {
    const seen: Array<string> = []
    const decoder = new SseDecoder((data) => seen.push(data))
    for (const chunk of ['data: {"a":1}\r\r', 'data: {"b":2}\r', "\ndata: more\r", "\n\r", "\n", "data: last\r\r"]) {
      decoder.push(chunk)
    }
    expect(seen).toEqual(['{"a":1}', '{"b":2}\nmore', "last"])
    expect(decoder.pending).toBe(0)
  })

  it("counts a short data line among a long comment as the whole chunk it keeps alive", () => {
    const decoder = new SseDecoder(() => {})
    const chunk = `:${"c".repeat(65_536)}\ndata: 12345678901234567890\n`
    for (let n = 0; n < 3; n++) decoder.push(chunk)
    expect(decoder.pending).toBe(3 * (chunk.length + PIECE_COST))
  })
})
