import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { ensureBuilt } from "./support/build.js"
import {
  type Deployment,
  devToken,
  newDeployment,
  removeDeployment,
  startGateway,
  waitServing
} from "./support/gateway.js"
import { grantDeveloper } from "./support/grant.js"
import { freePort } from "./support/http.js"
import { modernRequest } from "./support/json-rpc.js"
import { backendUrl, startMcpBackends } from "./support/mcp-backend.js"
import { interleavedCalls, type Target, type Throughput, throughput } from "./support/mcp-measure.js"
import type { Child } from "./support/process.js"
import { median } from "./support/stats.js"
import { formatCount, formatMs, type Table, verdict } from "./support/table.js"

export const name = "observability"

/**
 * What traces and metrics cost /mcp (docs/benchmarks.md, "Observability"): tools/call through one gateway
 * per setting — tracing off (the default), tracing on with an OTLP receiver on loopback, and tracing off
 * with `/metrics` scraped every second — at c=1 (latency, interleaved) and c=32 (throughput). Tracing off
 * must not regress (today's `mcp` suite figures); tracing on may cost at most 10 % of throughput at c=32.
 */
const C1 = { warmup: 200, rounds: 6, block: 100 } as const
const C32 = { connections: 32, warmupSeconds: 1, seconds: 3 } as const
const TRACING_MAX_COST = 0.1

interface Setting {
  readonly label: string
  readonly child: Child
  readonly deployment: Deployment
  readonly target: Target
  readonly metricsUrl: string
}

/** A receiver that acknowledges every export at once, counting the bytes (its cost is the bench process's). */
const startReceiver = async () => {
  let bytes = 0
  const server = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => {
      bytes += chunk.length
    })
    request.on("end", () => {
      response.writeHead(200, { "content-type": "application/x-protobuf" })
      response.end()
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    bytes: () => bytes,
    stop: () => new Promise<void>((done) => server.close(() => done()))
  }
}

const startSetting = async (
  entry: string,
  label: string,
  backendPort: number,
  observability: Record<string, unknown>
): Promise<Setting> => {
  const metricsPort = await freePort()
  const backends = [
    { id: "b0", url: backendUrl(backendPort), allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
  ]
  const deployment = await newDeployment({
    backends,
    observability: { metrics_listen: `127.0.0.1:${metricsPort}`, ...observability }
  })
  const child = startGateway(entry, deployment, { dev: true })
  await waitServing(child)
  const token = await devToken(entry, deployment)
  await grantDeveloper(deployment, { b0: ["echo"] })
  const { body, headers } = modernRequest("tools/call", { name: "b0__echo", arguments: { text: "hello" } }, "b0__echo")
  return {
    label,
    child,
    deployment,
    target: {
      url: `${deployment.baseUrl}/mcp`,
      body,
      headers: { ...headers, authorization: `Bearer ${token}` },
      pid: child.pid
    },
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`
  }
}

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const backendPort = await freePort()
  const backend = await startMcpBackends([backendPort], 0)
  const receiver = await startReceiver()
  const settings: Array<Setting> = []
  let scraper: NodeJS.Timeout | undefined
  try {
    settings.push(await startSetting(entry, "tracing off (default)", backendPort, {}))
    settings.push(await startSetting(entry, "tracing on, local receiver", backendPort, { otlp_endpoint: receiver.url }))
    const scraped = await startSetting(entry, "tracing off, /metrics every 1 s", backendPort, {})
    settings.push(scraped)
    let scrapes = 0
    scraper = setInterval(() => {
      fetch(scraped.metricsUrl)
        .then((response) => response.text())
        .then(() => {
          scrapes++
        })
        .catch(() => {})
    }, 1_000)

    const c1 = await interleavedCalls(
      settings.map((setting) => setting.target),
      C1
    )
    const c32: Array<Throughput> = []
    for (const setting of settings) c32.push(await throughput(setting.target, C32))
    const base = { ms: median(c1[0]!.ms), rps: c32[0]!.requestsPerSecond, cpu: c1[0]!.cpuMicrosPerCall ?? 0 }
    const rows = settings.map((setting, at) => {
      const ms = median(c1[at]!.ms)
      const rps = c32[at]!.requestsPerSecond
      const cpu = c1[at]!.cpuMicrosPerCall ?? 0
      const cost = 1 - rps / base.rps
      const check = at === 1 ? verdict(cost <= TRACING_MAX_COST) : at === 0 ? "baseline" : ""
      return [
        setting.label,
        formatMs(ms),
        `${(ms / base.ms).toFixed(2)}×`,
        `${cpu.toFixed(0)} µs`,
        formatCount(rps),
        `${(rps / base.rps).toFixed(2)}×`,
        String(c32[at]!.failed),
        check
      ]
    })
    return {
      title: "observability: tools/call with tracing off, tracing on, metrics scraped (1 backend)",
      columns: ["setting", "c=1 p50", "ratio", "CPU/call c=1", "c=32 req/s", "ratio", "failed", "tracing ≤ 10 %"],
      rows,
      notes: [
        `Receiver got ${formatCount(receiver.bytes())} bytes of spans; ${scrapes} scrapes of /metrics.`,
        "Ratios are against tracing off, measured in the same run (interleaved at c=1, one after another at c=32)."
      ]
    }
  } finally {
    if (scraper !== undefined) clearInterval(scraper)
    for (const setting of settings) {
      await setting.child.stop()
      removeDeployment(setting.deployment)
    }
    await receiver.stop()
    await backend.stop()
  }
}
