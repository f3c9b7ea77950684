import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { availableParallelism, cpus } from "node:os"
import { Agent, request } from "undici"
import { ensureBuilt } from "./support/build.js"
import { devToken, newDeployment, removeDeployment, startGateway, waitServing } from "./support/gateway.js"
import { grantDeveloper } from "./support/grant.js"
import { median, percentile } from "./support/stats.js"
import { formatMs, type Table, verdict } from "./support/table.js"

export const name = "relay"

/** Issue: relaying one sampling request round trip adds at most this over the backend's own time. */
const TARGET_OVERHEAD_MS = 1
const WARMUP = 200
const ROUNDS = 10
const BLOCK = 100
const VERSION = "2025-11-25"

/**
 * A minimal 2025-era stateful backend, in this process: `initialize` opens a session; `tools/call` of
 * `sample` answers with an SSE stream that carries a `sampling/createMessage` request, waits for the
 * client's POSTed answer on that session, then sends the result. Written by hand so that its own time is
 * small and steady, and what the gateway adds stands out.
 */
const startBackend = async () => {
  const sessions = new Set<string>()
  const waiting = new Map<string, (result: unknown) => void>()
  let counter = 0
  const read = async (req: IncomingMessage) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>
  }
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = JSON.stringify(body)
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
    res.end(text)
  }
  const server = createServer(async (req, res) => {
    if (req.method !== "POST") return json(res, 405, {})
    const message = await read(req)
    const session = req.headers["mcp-session-id"]
    if (message["method"] === "initialize") {
      const id = randomUUID()
      sessions.add(id)
      const result = {
        protocolVersion: VERSION,
        capabilities: { tools: {} },
        serverInfo: { name: "bench-sampler", version: "1.0.0" }
      }
      return json(res, 200, { jsonrpc: "2.0", id: message["id"], result }, { "mcp-session-id": id })
    }
    if (typeof session !== "string" || !sessions.has(session)) return json(res, 404, { jsonrpc: "2.0", id: null })
    if (!("method" in message)) {
      waiting.get(String(message["id"]))?.(message["result"])
      res.writeHead(202).end()
      return
    }
    if (typeof message["method"] === "string" && message["method"].startsWith("notifications/")) {
      res.writeHead(202).end()
      return
    }
    if (message["method"] === "tools/list") {
      const tools = ["sample", "echo"].map((name) => ({ name, inputSchema: { type: "object", properties: {} } }))
      return json(res, 200, { jsonrpc: "2.0", id: message["id"], result: { tools } })
    }
    if (message["method"] !== "tools/call")
      return json(res, 200, { jsonrpc: "2.0", id: message["id"], error: { code: -32601, message: "Method not found" } })
    if ((message["params"] as { name?: unknown } | undefined)?.name === "echo") {
      return json(res, 200, {
        jsonrpc: "2.0",
        id: message["id"],
        result: { content: [{ type: "text", text: "echo" }] }
      })
    }
    const asked = `s-${++counter}`
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    const params = { messages: [{ role: "user", content: { type: "text", text: "2 + 2?" } }], maxTokens: 10 }
    res.write(
      `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: asked, method: "sampling/createMessage", params })}\n\n`
    )
    waiting.set(asked, (answer) => {
      waiting.delete(asked)
      const text = (answer as { content?: { text?: string } } | undefined)?.content?.text ?? "none"
      const result = { content: [{ type: "text", text: `LLM response: ${text}` }] }
      res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: message["id"], result })}\n\n`)
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done())
        server.closeAllConnections()
      })
  }
}

interface Session {
  readonly url: string
  readonly headers: Record<string, string>
}

const agent = new Agent({ connections: 4, pipelining: 1 })

/** `initialize` declaring sampling: the session (the backend's own, or the gateway's id) the calls go on. */
const open = async (url: string, token?: string): Promise<Session> => {
  const base: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
  }
  const params = {
    protocolVersion: VERSION,
    capabilities: { sampling: {} },
    clientInfo: { name: "bench", version: "1" }
  }
  const answer = await request(url, {
    method: "POST",
    headers: base,
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params }),
    dispatcher: agent
  })
  await answer.body.text()
  const session = answer.headers["mcp-session-id"]
  if (answer.statusCode !== 200 || typeof session !== "string") throw new Error(`initialize: HTTP ${answer.statusCode}`)
  return { url, headers: { ...base, "mcp-protocol-version": VERSION, "mcp-session-id": session } }
}

/** One round trip: the call, the sampling request on its stream, the answer POSTed, the result. Milliseconds. */
const sampleOnce = async (session: Session, tool: string): Promise<number> => {
  const started = performance.now()
  const answer = await request(session.url, {
    method: "POST",
    headers: session.headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: {} } }),
    dispatcher: agent
  })
  let buffered = ""
  for await (const chunk of answer.body) {
    buffered += (chunk as Buffer).toString("utf8")
    let end = buffered.indexOf("\n\n")
    while (end >= 0) {
      const event = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      end = buffered.indexOf("\n\n")
      const data = event
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n")
      if (data === "") continue
      const message = JSON.parse(data) as Record<string, unknown>
      if (message["method"] === "sampling/createMessage") {
        const result = { role: "assistant", model: "bench", content: { type: "text", text: "four" } }
        const posted = await request(session.url, {
          method: "POST",
          headers: session.headers,
          body: JSON.stringify({ jsonrpc: "2.0", id: message["id"], result }),
          dispatcher: agent
        })
        await posted.body.dump()
      } else if (message["id"] === 1) {
        const text = (message["result"] as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text
        if (text !== "LLM response: four") throw new Error(`unexpected answer: ${data.slice(0, 300)}`)
        await answer.body.dump()
        return performance.now() - started
      }
    }
  }
  throw new Error(`the stream ended without a result (HTTP ${answer.statusCode})`)
}

/** A plain call on the same session, answered at once (JSON): one hop, for comparison. Milliseconds. */
const echoOnce = async (session: Session, tool: string): Promise<number> => {
  const started = performance.now()
  const answer = await request(session.url, {
    method: "POST",
    headers: session.headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: {} } }),
    dispatcher: agent
  })
  const text = await answer.body.text()
  if (!text.includes('"text":"echo"')) throw new Error(`unexpected answer: ${text.slice(0, 300)}`)
  return performance.now() - started
}

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const backend = await startBackend()
  const deployment = await newDeployment({
    backends: [{ id: "s", url: backend.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }]
  })
  const gateway = startGateway(entry, deployment, { dev: true })
  try {
    await waitServing(gateway)
    const token = await devToken(entry, deployment)
    await grantDeveloper(deployment, { s: ["sample", "echo"] })
    const direct = await open(backend.url)
    const through = await open(`${deployment.baseUrl}/mcp`, token)
    const paths = {
      direct: () => sampleOnce(direct, "sample"),
      gateway: () => sampleOnce(through, "s__sample"),
      directEcho: () => echoOnce(direct, "echo"),
      gatewayEcho: () => echoOnce(through, "s__echo")
    }
    const names = Object.keys(paths) as Array<keyof typeof paths>
    for (let at = 0; at < WARMUP; at++) for (const each of names) await paths[each]()
    // Interleaved in blocks, order rotating, so drift on a shared machine falls on every path alike.
    const times = {
      direct: [] as Array<number>,
      gateway: [] as Array<number>,
      directEcho: [] as Array<number>,
      gatewayEcho: [] as Array<number>
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? names : [...names].reverse()
      for (const which of order) for (let at = 0; at < BLOCK; at++) times[which].push(await paths[which]())
    }
    const directTimes = times.direct
    const gatewayTimes = times.gateway
    const overhead = median(gatewayTimes) - median(directTimes)
    const hop = median(times.gatewayEcho) - median(times.directEcho)
    const cpu = cpus()[0]?.model.trim() ?? "unknown CPU"
    return {
      title: "A 2025-era backend's sampling request relayed to the caller (one round trip)",
      columns: ["path", "p50", "p99", "added (p50)", "target", "result"],
      rows: [
        ["backend directly", formatMs(median(directTimes)), formatMs(percentile(directTimes, 99)), "—", "—", "—"],
        [
          "through the gateway",
          formatMs(median(gatewayTimes)),
          formatMs(percentile(gatewayTimes, 99)),
          formatMs(overhead),
          `≤ ${TARGET_OVERHEAD_MS} ms`,
          verdict(overhead <= TARGET_OVERHEAD_MS)
        ],
        [
          "for comparison: a plain call, directly",
          formatMs(median(times.directEcho)),
          formatMs(percentile(times.directEcho, 99)),
          "—",
          "—",
          "—"
        ],
        [
          "a plain call through the gateway",
          formatMs(median(times.gatewayEcho)),
          formatMs(percentile(times.gatewayEcho, 99)),
          formatMs(hop),
          "(information)",
          "—"
        ]
      ],
      notes: [
        "One round trip: `tools/call` → the backend's `sampling/createMessage` on the call's SSE stream → the " +
          "client's answer POSTed (through the gateway: matched in memory to the request it minted, sent on to the " +
          "backend) → the result. The same client and backend both ways, one call at a time, " +
          `${WARMUP} warm-up pairs, then ${ROUNDS} interleaved blocks of ${BLOCK}. ` +
          `Client, backend and gateway share this machine (${availableParallelism()} × ${cpu}).`,
        "A relayed round trip crosses the gateway three times (the call, the client's answer, the result), a " +
          "plain call once; the client and the backend run in one process, so directly no other process has to " +
          "be scheduled. On a busy machine each crossing waits for a core: compare the relay's added time " +
          "with three times the plain call's."
      ]
    }
  } finally {
    await gateway.stop()
    removeDeployment(deployment)
    await backend.stop()
    await agent.close()
  }
}
