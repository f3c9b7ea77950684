import { availableParallelism, cpus } from "node:os"
import { startPlainServer } from "./support/baseline.js"
import { ensureBuilt } from "./support/build.js"
import { newDeployment, removeDeployment, startGateway, waitServing } from "./support/gateway.js"
import { freePort, get, type Reply } from "./support/http.js"
import { LOAD, type LoadFigures, load } from "./support/load.js"
import type { Child } from "./support/process.js"
import { readRssMb } from "./support/rss.js"
import { formatCount, formatMb, formatShare, formatWholeMs, type Table, verdict } from "./support/table.js"

export const name = "healthz"

const TARGET_SHARE = 0.6

/** Both servers must give the same answer, or the comparison is meaningless. */
const checkReply = async (child: Child, url: string): Promise<Reply> => {
  const reply = await get(url)
  let status: unknown
  try {
    status = (JSON.parse(reply.body) as { readonly status?: unknown }).status
  } catch {
    status = undefined
  }
  if (reply.status !== 200 || status !== "ok") {
    throw new Error(`${child.name}: GET ${url} answered ${reply.status} ${reply.body}`)
  }
  return reply
}

const headerNames = (reply: Reply) =>
  Object.keys(reply.headers)
    .filter((name) => !["date", "connection", "keep-alive"].includes(name))
    .sort()
    .join(", ")

interface Measured {
  readonly figures: LoadFigures
  readonly reply: Reply
  readonly rssAfterMb: number | undefined
}

const measure = async (child: Child, url: string): Promise<Measured> => {
  try {
    const reply = await checkReply(child, url)
    const figures = await load(url)
    return { figures, reply, rssAfterMb: readRssMb(child.pid) }
  } finally {
    await child.stop()
  }
}

const measurePlain = async (): Promise<Measured> => {
  const port = await freePort()
  const plain = startPlainServer(port)
  await plain.waitForLine((line) => line === "listening", 10_000)
  return measure(plain, `http://127.0.0.1:${port}/healthz`)
}

const measureGateway = async (): Promise<Measured> => {
  const entry = await ensureBuilt()
  const deployment = await newDeployment()
  try {
    const gateway = startGateway(entry, deployment)
    await waitServing(gateway).catch(async (error: unknown) => {
      await gateway.stop()
      throw error
    })
    return await measure(gateway, `${deployment.baseUrl}/healthz`)
  } finally {
    removeDeployment(deployment)
  }
}

const row = (label: string, measured: Measured, plain: LoadFigures, target: string, result: string) => [
  label,
  formatCount(measured.figures.requestsPerSecond),
  formatWholeMs(measured.figures.p50Ms),
  formatWholeMs(measured.figures.p99Ms),
  formatCount(measured.figures.failed),
  formatMb(measured.rssAfterMb),
  formatShare(measured.figures.requestsPerSecond, plain.requestsPerSecond),
  target,
  result
]

export const run = async (): Promise<Table> => {
  const plain = await measurePlain()
  const gateway = await measureGateway()
  const share = gateway.figures.requestsPerSecond / plain.figures.requestsPerSecond
  const pass = share >= TARGET_SHARE && gateway.figures.failed === 0
  const cpu = cpus()[0]?.model.trim() ?? "unknown CPU"
  return {
    title: "GET /healthz throughput (autocannon)",
    columns: ["server", "req/s", "p50", "p99", "failed", "RSS after load", "ratio", "target", "result"],
    rows: [
      row("baseline: plain node http", plain, plain.figures, "—", "—"),
      row(
        "gateway (`node dist/main.js`)",
        gateway,
        plain.figures,
        `≥ ${TARGET_SHARE * 100}% of baseline`,
        verdict(pass)
      )
    ],
    notes: [
      `Load: ${LOAD.connections} keep-alive connections, ${LOAD.warmupSeconds} s warm-up discarded, ` +
        `${LOAD.durationSeconds} s measured, one server at a time. Client and server share this machine ` +
        `(${availableParallelism()} × ${cpu}): absolute figures are below what a separate load generator would ` +
        "see; compare the ratio (gateway req/s ÷ baseline req/s, higher is better). “failed” counts errors, " +
        "timeouts and non-2xx answers; any failure is a MISS. Latency has whole-millisecond resolution.",
      `Response headers (besides date/connection) — gateway: ${headerNames(gateway.reply)}; ` +
        `baseline: ${headerNames(plain.reply)}.`
    ]
  }
}
