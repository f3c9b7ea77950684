import { readFileSync } from "node:fs"
import { arch, availableParallelism, cpus, loadavg, platform } from "node:os"
import { ensureBuilt, projectRoot } from "./support/build.js"
import type { Suite } from "./support/suite.js"
import { formatTable } from "./support/table.js"

/**
 * Every suite, in run order: its name and its file (`bench/<name>.ts`, exporting `name` and `run`), added
 * here. Only the suites picked are imported, so one suite whose imports fail does not stop the others.
 */
const suites: ReadonlyArray<{ readonly name: string; readonly load: () => Promise<Suite> }> = [
  { name: "startup", load: () => import("./startup.js") },
  { name: "healthz", load: () => import("./healthz.js") },
  { name: "mcp", load: () => import("./mcp.js") },
  { name: "observability", load: () => import("./observability.js") },
  { name: "relay", load: () => import("./relay.js") },
  { name: "policy", load: () => import("./policy.js") },
  { name: "auth-verify", load: () => import("./auth-verify.js") },
  { name: "auth-refresh", load: () => import("./auth-refresh.js") },
  { name: "enterprise-sign-in", load: () => import("./enterprise-sign-in.js") },
  { name: "directory", load: () => import("./directory.js") },
  { name: "approvals", load: () => import("./approvals.js") },
  { name: "answers", load: () => import("./answers.js") },
  { name: "webhooks", load: () => import("./webhooks.js") },
  { name: "audit", load: () => import("./audit.js") },
  { name: "http-tools", load: () => import("./http-tools.js") },
  { name: "openapi", load: () => import("./openapi.js") },
  { name: "tool-sources", load: () => import("./tool-sources.js") },
  { name: "console", load: () => import("./console.js") }
]

const picked = process.argv.slice(2)
const unknown = picked.filter((wanted) => !suites.some((suite) => suite.name === wanted))
if (unknown.length > 0) {
  process.stderr.write(`unknown suite(s): ${unknown.join(", ")}; known: ${suites.map((s) => s.name).join(", ")}\n`)
  process.exit(2)
}
const selected = picked.length === 0 ? suites : suites.filter((suite) => picked.includes(suite.name))

const { version } = JSON.parse(readFileSync(`${projectRoot}package.json`, "utf8")) as { readonly version: string }
const cpu = cpus()[0]?.model.trim() ?? "unknown CPU"

// Other work on the machine skews every figure: say so beside them. Read before our own build adds to it.
const [load1 = 0] = loadavg()
const busy = load1 > availableParallelism() / 2
const began = performance.now()
process.stderr.write("bench: building (npm run build)…\n")
await ensureBuilt()

process.stdout.write(
  `## gateway ${version} benchmarks\n\n` +
    `${new Date().toISOString()} · Node ${process.version} · ${platform()} ${arch()} · ` +
    `${availableParallelism()} × ${cpu} · load average ${load1.toFixed(2)}` +
    (busy ? " (busy machine: figures are unreliable, run again when it is idle)" : "") +
    "\n"
)

let failed = false
for (const suite of selected) {
  const from = performance.now()
  process.stderr.write(`bench: ${suite.name}…\n`)
  try {
    const loaded = await suite.load()
    if (loaded.name !== suite.name) throw new Error(`bench/${suite.name}.ts exports the name "${loaded.name}"`)
    const tables = await loaded.run()
    for (const table of Array.isArray(tables) ? tables : [tables]) process.stdout.write(`\n${formatTable(table)}\n`)
  } catch (error) {
    failed = true
    const message = error instanceof Error ? error.message : String(error)
    process.stdout.write(`\n### ${suite.name}\n\nFAILED: ${message.split("\n")[0]}\n`)
    process.stderr.write(`bench: ${suite.name} failed:\n${message}\n`)
  }
  process.stderr.write(`bench: ${suite.name} took ${((performance.now() - from) / 1000).toFixed(1)} s\n`)
}
process.stderr.write(`bench: done in ${((performance.now() - began) / 1000).toFixed(1)} s\n`)
process.exit(failed ? 1 : 0)
