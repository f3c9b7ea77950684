import { readFileSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { createMcpHandler, Server, type Tool } from "@modelcontextprotocol/server"
import { serveFetch } from "../src/demo/http-bridge.js"
import { ensureBuilt } from "./support/build.js"
import { devToken, newDeployment, removeDeployment, startGateway, waitServing } from "./support/gateway.js"
import { freePort } from "./support/http.js"
import { modernRequest } from "./support/json-rpc.js"
import { sleep } from "./support/process.js"
import { sampleRss } from "./support/rss-sampler.js"
import { percentile } from "./support/stats.js"
import { formatCount, formatMb, formatWholeMs, type Table, verdict } from "./support/table.js"

/**
 * Memory held for backend answers (docs/operations.md, "Memory held for backend answers"): 16 calls
 * at once, each answered 30 MB by a real MCP backend, through a gateway without a gateway-wide budget
 * (`server.max_answer_bytes_in_flight` at 1 TiB: what it was before the budget), with 128 MiB and with
 * the default (64 MiB). Per gateway: its peak RSS, `/healthz` latency while the answers arrive, how many calls
 * succeeded and how many were refused, and a 30 MB call made after (memory given back: it succeeds).
 */
export const name = "answers"

const CALLS = 16
const ANSWER_BYTES = 30_000_000
const MiB = 1024 * 1024
/** The peak RSS the budget must keep the burst under (the trial: 1.7 GB without one). */
const TARGET_PEAK_MB = 800

const big: Tool = { name: "big", description: "Answers 30 MB of text", inputSchema: { type: "object" } }

/** The backend: one MCP server in this process (its memory is not the gateway's), one 30 MB text built once. */
const startBackend = async (port: number) => {
  const text = "x".repeat(ANSWER_BYTES)
  const makeServer = () => {
    const server = new Server({ name: "bench-answers", version: "1.0.0" }, { capabilities: { tools: {} } })
    server.setRequestHandler("tools/list", () => ({ tools: [big] }))
    server.setRequestHandler("tools/call", () => ({ content: [{ type: "text", text }] }))
    return server
  }
  return serveFetch(createMcpHandler(makeServer).fetch, "127.0.0.1", port)
}

interface Outcome {
  readonly ok: boolean
  readonly ms: number
}

/** One `tools/call` on a connection of its own; the answer read whole, then judged by its start. */
const callBig = (mcpUrl: string, token: string) =>
  new Promise<Outcome>((resolve, reject) => {
    const started = performance.now()
    const { body, headers } = modernRequest("tools/call", { name: "big__big", arguments: {} }, "big__big")
    const req = request(
      mcpUrl,
      {
        method: "POST",
        agent: false,
        headers: { ...headers, authorization: `Bearer ${token}`, "content-length": String(Buffer.byteLength(body)) }
      },
      (res) => {
        let head = ""
        let size = 0
        res.on("data", (chunk: Buffer) => {
          if (head.length < 200) head += chunk.subarray(0, 200).toString("utf8")
          size += chunk.length
        })
        res.on("end", () =>
          resolve({
            ok: res.statusCode === 200 && head.includes('"result"') && size > ANSWER_BYTES,
            ms: performance.now() - started
          })
        )
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(body)
  })

/** `GET /healthz` one after another until `done`; each one's latency (a probe that fails counts 5 s). */
const probeHealth = async (url: string, done: () => boolean): Promise<Array<number>> => {
  const latencies: Array<number> = []
  while (!done()) {
    const started = performance.now()
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(url, { agent: false, timeout: 5_000 }, (res) => {
        res.resume()
        res.on("end", () => resolve(res.statusCode === 200))
      })
      req.on("timeout", () => req.destroy())
      req.on("error", () => resolve(false))
      req.end()
    })
    latencies.push(ok ? performance.now() - started : 5_000)
    await sleep(20)
  }
  return latencies
}

interface Measured {
  readonly peakMb: number | undefined
  readonly healthP99: number
  readonly healthMax: number
  readonly succeeded: number
  readonly refused: number
  readonly burstMs: number
  readonly after: boolean
}

const measure = async (entry: string, backendPort: number, budget: number): Promise<Measured> => {
  const deployment = await newDeployment({
    backends: [
      {
        id: "big",
        url: `http://127.0.0.1:${backendPort}/mcp`,
        allow_insecure_http: true,
        tool_rules: [{ tools: ["*"] }]
      }
    ]
  })
  // The budget is a `server` key: added to the section newDeployment wrote.
  const text = readFileSync(deployment.configFile, "utf8")
  writeFileSync(deployment.configFile, text.replace(/^server:\n/, `server:\n  max_answer_bytes_in_flight: ${budget}\n`))
  const gateway = startGateway(entry, deployment, { dev: true })
  try {
    await waitServing(gateway)
    const token = await devToken(entry, deployment)
    const mcpUrl = `${deployment.baseUrl}/mcp`
    // One call first: connections, the view and the code paths warm, and the figure after it is the idle RSS.
    await callBig(mcpUrl, token)
    const rss = sampleRss(gateway.pid, 25)
    let finished = false
    const health = probeHealth(`${deployment.baseUrl}/healthz`, () => finished)
    const started = performance.now()
    const outcomes = await Promise.all(Array.from({ length: CALLS }, () => callBig(mcpUrl, token)))
    const burstMs = performance.now() - started
    finished = true
    const latencies = await health
    const peakMb = rss.stop()
    const after = await callBig(mcpUrl, token)
    const succeeded = outcomes.filter((outcome) => outcome.ok).length
    return {
      peakMb,
      healthP99: percentile(latencies, 99),
      healthMax: Math.max(...latencies),
      succeeded,
      refused: CALLS - succeeded,
      burstMs,
      after: after.ok
    }
  } finally {
    await gateway.stop()
    removeDeployment(deployment)
  }
}

const row = (label: string, measured: Measured, target: string, result: string) => [
  label,
  formatMb(measured.peakMb),
  formatWholeMs(measured.healthP99),
  formatWholeMs(measured.healthMax),
  `${formatCount(measured.succeeded)} / ${formatCount(measured.refused)}`,
  formatWholeMs(measured.burstMs),
  measured.after ? "ok" : "FAILED",
  target,
  result
]

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const backendPort = await freePort()
  const backend = await startBackend(backendPort)
  try {
    const unbounded = await measure(entry, backendPort, 2 ** 40)
    const larger = await measure(entry, backendPort, 128 * MiB)
    const bounded = await measure(entry, backendPort, 64 * MiB)
    const pass =
      (bounded.peakMb ?? Number.POSITIVE_INFINITY) <= TARGET_PEAK_MB && bounded.succeeded > 0 && bounded.after
    return {
      title: `Memory held for backend answers: ${CALLS} calls at once, each answered 30 MB`,
      columns: [
        "gateway",
        "peak RSS",
        "/healthz p99",
        "/healthz max",
        "calls ok / refused",
        "burst",
        "a call after",
        "target",
        "result"
      ],
      rows: [
        row("no gateway-wide budget (1 TiB: as before)", unbounded, "—", "—"),
        row("`server.max_answer_bytes_in_flight` 128 MiB", larger, "—", "—"),
        row(
          "`server.max_answer_bytes_in_flight` 64 MiB (default)",
          bounded,
          `peak ≤ ${TARGET_PEAK_MB} MB, some calls ok, the call after ok`,
          verdict(pass)
        )
      ],
      notes: [
        "One gateway at a time (`node dist/main.js serve --dev`, a development token), one real MCP backend in " +
          "the bench process answering every call with 30,000,000 characters of text. Each gateway answers one " +
          "call first (warm-up); then 16 calls go out at once, each on a connection of its own, while `/healthz` " +
          "is asked one request after another (20 ms apart) and the gateway's RSS is read every 25 ms. " +
          "“refused” calls got `-32603 …answer was dropped…` at once; “a call after” is one more 30 MB call " +
          "once the burst is over (what the refused and finished calls held was given back). Client, backend " +
          "and gateway share the machine's cores: latency figures include their contention. The budget bounds " +
          "memory, not the event loop: each 30 MB answer is still parsed and serialised whole (about 100-300 ms " +
          "of CPU each), so `/healthz` waits behind the answers being written; the budget bounds how many at once."
      ]
    }
  } finally {
    await new Promise((done) => backend.close(done))
  }
}
