import { startPlainServer } from "./support/baseline.js"
import { ensureBuilt, projectRoot } from "./support/build.js"
import {
  type Deployment,
  newDeployment,
  removeDeployment,
  SERVING_TIMEOUT_MS,
  startGateway
} from "./support/gateway.js"
import { freePort, msUntil200 } from "./support/http.js"
import { type Child, sleep, startProcess } from "./support/process.js"
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

// A newcomer's first commands (README, "Quick start"): `npm start` in the checkout, and the CLI commands
// the README shows, as `node dist/main.js <command>` (what `npm run -s dev-token` runs, without npm's own start).
const NEWCOMER_RUNS = 3
const TARGET_NPM_START_MS = 3_000
const TARGET_COMMAND_MS = 2_000

/**
 * `npm start -- --config <file> --demo-port <port>` in the checkout (its `prestart` finds dist/ up to date:
 * the bench built it), spawn → /healthz 200; then SIGTERM to npm.
 */
const npmStartOnce = async (): Promise<number> => {
  const demoPort = await freePort()
  const deployment = await newDeployment({
    backends: [{ id: "demo", url: `http://127.0.0.1:${demoPort}/mcp`, allow_insecure_http: true }]
  })
  const npm = startProcess(
    "npm start",
    "npm",
    ["start", "--", "--config", deployment.configFile, "--demo-port", String(demoPort)],
    {
      cwd: projectRoot,
      // GATEWAY_CONFIG_KEY set: --dev then writes no development key file into the checkout.
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: deployment.dir,
        GATEWAY_CONFIG_KEY: deployment.configKey,
        npm_config_update_notifier: "false"
      }
    }
  )
  try {
    return await msUntil200(`${deployment.baseUrl}/healthz`, npm, SERVING_TIMEOUT_MS)
  } finally {
    await npm.stop()
    removeDeployment(deployment)
  }
}

/** `node dist/main.js <args>` in the deployment's directory (its development key file), spawn → exit 0. */
const commandOnce = async (entry: string, deployment: Deployment, args: ReadonlyArray<string>): Promise<number> => {
  const command = startProcess(`gateway ${args[0]}`, process.execPath, [entry, ...args], {
    cwd: deployment.dir,
    env: { PATH: process.env["PATH"] ?? "", HOME: deployment.dir }
  })
  const status = await command.exited
  if (status.code !== 0) throw new Error(`gateway ${args.join(" ")} exited with ${status.code}\n${command.tail()}`)
  return performance.now() - command.spawnedAt
}

interface NewcomerTimes {
  readonly npmStart: ReadonlyArray<number>
  readonly devToken: ReadonlyArray<number>
  readonly initAdmin: ReadonlyArray<number>
}

const newcomerTimes = async (entry: string): Promise<NewcomerTimes> => {
  const npmStart: number[] = []
  const devToken: number[] = []
  const initAdmin: number[] = []
  for (let index = 0; index < NEWCOMER_RUNS; index++) {
    npmStart.push(await npmStartOnce())
    // A development deployment as `npm start` leaves it: its database made by `serve --dev`.
    const deployment = await newDeployment()
    const gateway = startGateway(entry, deployment, { dev: true })
    await msUntil200(`${deployment.baseUrl}/healthz`, gateway, SERVING_TIMEOUT_MS)
    await gateway.stop()
    devToken.push(await commandOnce(entry, deployment, ["dev-token", "--config", deployment.configFile]))
    initAdmin.push(await commandOnce(entry, deployment, ["init-admin", "--config", deployment.configFile, "--dev"]))
    removeDeployment(deployment)
  }
  return { npmStart, devToken, initAdmin }
}

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
  const newcomer = await newcomerTimes(entry)
  const gatewayRss = await idleRss(startGateway(entry, existing), `${existing.baseUrl}/healthz`)
  const plainRss = await idleRss(startPlainServer(plainPort), `http://127.0.0.1:${plainPort}/healthz`)
  removeDeployment(existing)

  const plainMedian = median(plain)
  const coldStarts = cold.map((start) => start.startMs)
  const warmStarts = warm.map((start) => start.startMs)
  const stops = [...cold, ...warm]
  const cleanExits = [primer, ...stops].filter((stop) => stop.clean).length
  const startRow = (label: string, values: ReadonlyArray<number>, target = TARGET_START_MS) => [
    label,
    spread(values),
    formatMs(plainMedian),
    formatTimes(median(values), plainMedian),
    `< ${formatMs(target)}`,
    verdict(median(values) < target)
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
      startRow(
        `\`npm start\` (demo + \`serve --dev\`) → /healthz 200 (median of ${NEWCOMER_RUNS}, min–max)`,
        newcomer.npmStart,
        TARGET_NPM_START_MS
      ),
      startRow(
        `\`gateway dev-token\` spawn → exit (median of ${NEWCOMER_RUNS}, min–max)`,
        newcomer.devToken,
        TARGET_COMMAND_MS
      ),
      startRow(
        `\`gateway init-admin --dev\` spawn → exit (median of ${NEWCOMER_RUNS}, min–max)`,
        newcomer.initAdmin,
        TARGET_COMMAND_MS
      ),
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
        "database” reopens one with its key. The OS page cache is warm for both: a primer run precedes them.",
      "`npm start` runs in the checkout, as a newcomer does (its prestart finds dist/ up to date), on a new SQLite " +
        "deployment each time; the time includes npm's own start. `gateway <command>` is `node dist/main.js <command>` " +
        "(what `npm run -s dev-token` runs, without npm's own start of about 0.3 s) against a database `serve --dev` made; " +
        "init-admin creates the administrator, password hashing included."
    ]
  }
}
