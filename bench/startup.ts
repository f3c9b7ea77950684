import { startPlainServer } from "./support/baseline.js"
import { ensureBuilt } from "./support/build.js"
import {
  type Deployment,
  newDeployment,
  removeDeployment,
  SERVING_TIMEOUT_MS,
  startGateway
} from "./support/gateway.js"
import { freePort, msUntil200 } from "./support/http.js"
import { type Child, sleep } from "./support/process.js"
import { readRssMb } from "./support/rss.js"
import { median, range } from "./support/stats.js"
import { formatMb, formatMs, formatTimes, type Table, verdict } from "./support/table.js"

export const name = "startup"

const RUNS = 5
const TARGET_START_MS = 1_000
const TARGET_RSS_MB = 100
// Long enough for start-up garbage to be collected and lazy work to settle, short enough to keep the bench quick.
const IDLE_SETTLE_MS = 1_000

interface Stopped {
  readonly stopMs: number
  readonly clean: boolean
}

const stopTimed = async (child: Child): Promise<Stopped> => {
  const from = performance.now()
  const status = await child.stop()
  return { stopMs: performance.now() - from, clean: status.code === 0 }
}

interface GatewayStart extends Stopped {
  readonly startMs: number
}

const startGatewayOnce = async (entry: string, deployment: Deployment): Promise<GatewayStart> => {
  const gateway = startGateway(entry, deployment)
  try {
    const startMs = await msUntil200(`${deployment.baseUrl}/healthz`, gateway, SERVING_TIMEOUT_MS)
    return { startMs, ...(await stopTimed(gateway)) }
  } finally {
    await gateway.stop()
  }
}

const startPlainOnce = async (port: number): Promise<number> => {
  const plain = startPlainServer(port)
  try {
    return await msUntil200(`http://127.0.0.1:${port}/healthz`, plain, SERVING_TIMEOUT_MS)
  } finally {
    await plain.stop()
  }
}

interface IdleRss {
  readonly early: number | undefined
  readonly settled: number | undefined
}

/**
 * RSS of an idle server: a second after its first answer, and once idle for SETTLED_MS, by which
 * time V8's memory reducer has run its idle collections (it starts them after several idle seconds).
 */
const idleRss = async (child: Child, url: string): Promise<IdleRss> => {
  try {
    await msUntil200(url, child, SERVING_TIMEOUT_MS)
    await sleep(IDLE_SETTLE_MS)
    const early = readRssMb(child.pid)
    await sleep(SETTLED_MS - IDLE_SETTLE_MS)
    return { early, settled: readRssMb(child.pid) }
  } finally {
    await child.stop()
  }
}

const SETTLED_MS = 40_000

const spread = (values: ReadonlyArray<number>) => {
  const { min, max } = range(values)
  return `${formatMs(median(values))} (${formatMs(min)}–${formatMs(max)})`
}

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const existing = await newDeployment()
  // Creates the database the warm runs reopen; also pulls Node and the bundle into the page cache.
  const primer = await startGatewayOnce(entry, existing)
  const plainPort = await freePort()

  const plain: number[] = []
  const cold: GatewayStart[] = []
  const warm: GatewayStart[] = []
  // Interleaved, so a machine that gets busier or quieter during the run shifts all three alike.
  for (let index = 0; index < RUNS; index++) {
    plain.push(await startPlainOnce(plainPort))
    const fresh = await newDeployment()
    cold.push(await startGatewayOnce(entry, fresh))
    removeDeployment(fresh)
    warm.push(await startGatewayOnce(entry, existing))
  }
  const gatewayRss = await idleRss(startGateway(entry, existing), `${existing.baseUrl}/healthz`)
  const plainRss = await idleRss(startPlainServer(plainPort), `http://127.0.0.1:${plainPort}/healthz`)
  removeDeployment(existing)

  const plainMedian = median(plain)
  const coldStarts = cold.map((start) => start.startMs)
  const warmStarts = warm.map((start) => start.startMs)
  const stops = [...cold, ...warm]
  const cleanExits = [primer, ...stops].filter((stop) => stop.clean).length
  const startRow = (label: string, values: ReadonlyArray<number>) => [
    label,
    spread(values),
    formatMs(plainMedian),
    formatTimes(median(values), plainMedian),
    `< ${formatMs(TARGET_START_MS)}`,
    verdict(median(values) < TARGET_START_MS)
  ]

  const rssRow = (label: string, gateway: number | undefined, base: number | undefined, target: string) => [
    label,
    formatMb(gateway),
    formatMb(base),
    gateway === undefined || base === undefined ? "n/a" : formatTimes(gateway, base),
    target,
    gateway === undefined || target === "—" ? "—" : verdict(gateway < TARGET_RSS_MB)
  ]

  return {
    title: "Start-up and idle memory (compiled `node dist/main.js serve`, SQLite)",
    columns: ["measurement", "gateway", "baseline: plain node http", "ratio", "target", "result"],
    rows: [
      startRow(`spawn → /healthz 200, fresh database (median of ${RUNS}, min–max)`, coldStarts),
      startRow(`spawn → /healthz 200, existing database (median of ${RUNS}, min–max)`, warmStarts),
      rssRow(`RSS ${IDLE_SETTLE_MS / 1000} s after first 200`, gatewayRss.early, plainRss.early, "—"),
      rssRow(
        `idle RSS, ${SETTLED_MS / 1000} s after first 200`,
        gatewayRss.settled,
        plainRss.settled,
        `< ${TARGET_RSS_MB} MB`
      ),
      ["SIGTERM → exit, idle (median)", formatMs(median(stops.map((stop) => stop.stopMs))), "—", "—", "—", "—"],
      [
        "SIGTERM → exit code 0",
        `${cleanExits}/${stops.length + 1} runs`,
        "—",
        "—",
        "every run",
        verdict(cleanExits === stops.length + 1)
      ]
    ],
    notes: [
      "Ratio = gateway ÷ baseline (lower is better). Every start is a new process. “Fresh database” is a new " +
        "deployment each time (new directory, new GATEWAY_CONFIG_KEY, SQLite file created and migrated); “existing " +
        "database” reopens one with its key. The OS page cache is warm for both: a primer run precedes them."
    ]
  }
}
