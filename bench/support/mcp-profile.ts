/**
 * Where a forwarded `tools/call` spends its time (docs/decisions.md, "Per-call overhead"): one backend
 * process and a compiled gateway (as the `mcp` suite starts them), driven at concurrency 1 with the
 * suite's 2026-07-28 request, direct and through the gateway in interleaved blocks (ABBA). Prints mean,
 * p50 and p99 of each path and the gateway's CPU per call (utime + stime from /proc/<pid>/stat), which
 * is far less noisy than latency on a shared machine.
 *
 *   npx tsx bench/support/mcp-profile.ts                      # figures only
 *   npx tsx bench/support/mcp-profile.ts --cpu-prof           # also a V8 CPU profile, in $TMPDIR/gateway-mcp-profile
 *   npx tsx bench/support/mcp-profile.ts --compare <main.js>  # another build beside this one, interleaved
 *
 * `--full` uses the suite's 10 backends of 500 tools (else one of 11); `--legacy` sends 2025-era
 * requests; `--c32` adds the suite's c=32 load per path (ABBA), with each process's CPU per call;
 * `--calls N` sets the measured calls per path (default 3,000); `--no-build` measures dist/ as it is;
 * `--trace-gc` counts the gateway's garbage collections during the measured calls
 * (MCP_PROFILE_GC_LINES=1 also prints each one's line); `--heap-sample` samples its allocations
 * (`--heap-live`: only those still reachable at exit); `--attach S` prints the gateways' pids and waits
 * S seconds (to attach `strace -c -f -p` or perf) before measuring; `--node-flags "<flags>"` starts the
 * gateways with those Node flags (e.g. `--perf-basic-prof --interpreted-frames-native-stack`, for
 * `perf record -e cpu-clock -g -p <pid>`).
 */
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import { ensureBuilt, gatewayEntry } from "./build.js"
import { cpuMicros } from "./cpu.js"
import { type Deployment, devToken, newDeployment, removeDeployment, startGateway, waitServing } from "./gateway.js"
import { grantDeveloper } from "./grant.js"
import { freePort } from "./http.js"
import { keepAliveAgent, legacyRequest, modernRequest, postTimed, resultOf } from "./json-rpc.js"
import { backendUrl, startMcpBackends } from "./mcp-backend.js"
import { type Child, startProcess } from "./process.js"
import { median, percentile } from "./stats.js"

const args = process.argv.slice(2)
const option = (name: string) => {
  const at = args.indexOf(name)
  return at >= 0 ? args[at + 1] : undefined
}
const profile = args.includes("--cpu-prof")
const calls = Number(option("--calls") ?? 3_000)
const legacy = args.includes("--legacy")
const full = args.includes("--full")
const traceGc = args.includes("--trace-gc")
const heapSample = args.includes("--heap-sample") || args.includes("--heap-live")
/** Where profiles are written (outside the checkout). */
const profileDir = join(tmpdir(), "gateway-mcp-profile")
// `--heap-live`: only what is still reachable when the gateway exits (what accumulates).
const collected = !args.includes("--heap-live")
/**
 * `--heap-sample`: V8's sampling heap profiler over the gateway's whole life, keeping what minor and
 * major collections freed (Node's --heap-prof keeps only what survives), written beside the CPU profiles on exit: where
 * the allocations that drive the collections come from. Open it in Chrome DevTools (Memory tab).
 */
const heapSampler = `data:text/javascript,${encodeURIComponent(`
  import { Session } from "node:inspector";
  import { mkdirSync, writeFileSync } from "node:fs";
  const session = new Session();
  session.connect();
  session.post("HeapProfiler.startSampling", {
    samplingInterval: 4096, includeObjectsCollectedByMajorGC: ${collected}, includeObjectsCollectedByMinorGC: ${collected}
  });
  process.on("exit", () => session.post("HeapProfiler.stopSampling", (error, result) => {
    mkdirSync(${JSON.stringify(profileDir)}, { recursive: true });
    if (!error) writeFileSync(${JSON.stringify(`${profileDir}/`)} + process.pid + ".heapprofile", JSON.stringify(result.profile));
  }));
`)}`
const block = 100

const current = args.includes("--no-build") ? gatewayEntry : await ensureBuilt()
const compared = option("--compare")
const entries: ReadonlyArray<readonly [string, string]> = [
  ...(compared === undefined ? [] : [["compared", compared] as const]),
  ["gateway", current] as const
]
// `--full`: the `mcp` suite's 10 backends of 500 tools each; else one backend of 11 tools.
const fillers = full ? 499 : 10
const ports = await Promise.all(Array.from({ length: full ? 10 : 1 }, () => freePort()))
const port = ports[0]!
const backend = await startMcpBackends(ports, fillers)
const backends = ports.map((each, at) => ({
  id: `b${at}`,
  url: backendUrl(each),
  allow_insecure_http: true,
  required: true,
  tool_rules: [{ tools: ["*"] }]
}))

interface Gateway {
  readonly label: string
  readonly child: Child
  readonly deployment: Deployment
  token: string
  readonly gc: { measuring: boolean; readonly pauses: Map<string, { count: number; ms: number }>; last: string }
}

// As startGateway starts it (--dev: the key comes from the deployment's development key file), with
// --cpu-prof, --trace-gc or other flags in front when asked (Node refuses some in NODE_OPTIONS).
const start = async (label: string, entry: string): Promise<Gateway> => {
  const deployment = await newDeployment({ backends })
  const flags = [
    ...(profile ? ["--cpu-prof", "--cpu-prof-interval=100", `--cpu-prof-dir=${profileDir}`] : []),
    ...(traceGc ? ["--trace-gc"] : []),
    ...(heapSample ? ["--import", heapSampler] : []),
    ...(option("--node-flags")
      ?.split(" ")
      .filter((flag) => flag !== "") ?? [])
  ]
  const child =
    flags.length > 0
      ? startProcess(label, process.execPath, [...flags, entry, "serve", "--config", deployment.configFile, "--dev"], {
          cwd: deployment.dir,
          env: { PATH: process.env["PATH"] ?? "", HOME: deployment.dir }
        })
      : startGateway(entry, deployment, { dev: true })
  // `--trace-gc`: V8's line per collection, counted and summed per kind while the measured calls run.
  const gc = { measuring: false, pauses: new Map<string, { count: number; ms: number }>(), last: "" }
  if (traceGc) {
    child
      .waitForLine((line) => {
        const match =
          /(Scavenge|Mark-Compact|Mark-Compact \(reduce\)|Minor Mark-Sweep)[^,]*, ([0-9.]+) \/ [0-9.]+ ms/.exec(line)
        if (gc.measuring && match !== null) {
          const entry = gc.pauses.get(match[1]!) ?? { count: 0, ms: 0 }
          entry.count += 1
          entry.ms += Number(match[2])
          gc.pauses.set(match[1]!, entry)
          gc.last = line
          if (process.env["MCP_PROFILE_GC_LINES"] !== undefined) process.stderr.write(`${line}\n`)
        }
        return false
      }, 3_600_000)
      .catch(() => {})
  }
  await waitServing(child)
  const token = await devToken(entry, deployment)
  const tools = ["echo", ...Array.from({ length: fillers }, (_, at) => `tool_${String(at).padStart(4, "0")}`)]
  await grantDeveloper(deployment, Object.fromEntries(backends.map((each) => [each.id, tools])))
  return { label, child, deployment, token, gc }
}

const gateways: Array<Gateway> = []
try {
  for (const [label, entry] of entries) gateways.push(await start(label, entry))
  const request = (name: string) =>
    legacy
      ? legacyRequest("tools/call", { name, arguments: { text: "hello" } })
      : modernRequest("tools/call", { name, arguments: { text: "hello" } }, name)
  const through = request("b0__echo")
  const targets = [
    { label: "direct", pid: undefined as number | undefined, url: backendUrl(port), ...request("echo") },
    ...gateways.map((gateway) => ({
      label: gateway.label,
      pid: gateway.child.pid as number | undefined,
      url: `${gateway.deployment.baseUrl}/mcp`,
      body: through.body,
      headers: { ...through.headers, authorization: `Bearer ${gateway.token}` }
    }))
  ]
  const agents = targets.map(() => keepAliveAgent())
  const samples = targets.map((): Array<number> => [])
  const cpu = targets.map(() => 0)
  const run = async (at: number, count: number, keep: boolean) => {
    const target = targets[at]!
    const before = target.pid === undefined ? 0 : cpuMicros(target.pid)
    for (let n = 0; n < count; n++) {
      const timed = await postTimed(agents[at]!, target.url, target.body, target.headers)
      resultOf(timed)
      if (keep) samples[at]!.push(timed.ms)
    }
    if (target.pid !== undefined && keep) cpu[at]! += cpuMicros(target.pid) - before
  }
  for (const at of targets.keys()) await run(at, at === 0 ? 500 : 1_000, false)
  const attach = option("--attach")
  if (attach !== undefined) {
    process.stdout.write(`pids ${gateways.map((gateway) => `${gateway.label} ${gateway.child.pid}`).join(", ")}\n`)
    await new Promise((resolve) => setTimeout(resolve, Number(attach) * 1000))
  }
  const order = [...targets.keys()]
  for (const gateway of gateways) gateway.gc.measuring = true
  for (let round = 0; round < calls / block; round++) {
    for (const at of round % 2 === 0 ? order : [...order].reverse()) await run(at, block, true)
  }
  for (const agent of agents) agent.destroy()
  for (const gateway of gateways) {
    gateway.gc.measuring = false
    for (const [kind, { count, ms }] of gateway.gc.pauses) {
      process.stdout.write(
        `${gateway.label}: ${count} × ${kind}, ${ms.toFixed(1)} ms in all, ${(ms / count).toFixed(2)} ms each\n`
      )
    }
    if (gateway.gc.last !== "") process.stdout.write(`${gateway.label}: last collection: ${gateway.gc.last.trim()}\n`)
  }
  const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length
  const direct = samples[0]!
  for (const [at, target] of targets.entries()) {
    const values = samples[at]!
    const figures = `mean ${mean(values).toFixed(3)}  p50 ${median(values).toFixed(3)}  p99 ${percentile(values, 99).toFixed(3)} ms`
    const overhead =
      at === 0
        ? ""
        : `  overhead mean +${(mean(values) - mean(direct)).toFixed(3)}  p50 +${(median(values) - median(direct)).toFixed(3)}` +
          `  p99 +${(percentile(values, 99) - percentile(direct, 99)).toFixed(3)} ms  CPU ${(cpu[at]! / values.length).toFixed(0)} µs/call`
    process.stdout.write(`${target.label.padEnd(9)}${figures}${overhead}\n`)
  }
  // `--c32`: each path under the suite's c=32 load (autocannon, 3 s), ABBA, with each process's CPU per call.
  if (args.includes("--c32")) {
    for (const at of [...order, ...[...order].reverse()]) {
      const target = targets[at]!
      const before = { gateway: target.pid === undefined ? 0 : cpuMicros(target.pid), backend: cpuMicros(backend.pid) }
      const result = await autocannon({
        url: target.url,
        method: "POST",
        headers: { ...target.headers },
        body: target.body,
        connections: 32,
        duration: 3
      })
      const total = result.requests.total
      const gatewayCpu = target.pid === undefined ? 0 : cpuMicros(target.pid) - before.gateway
      process.stdout.write(
        `c=32 ${target.label.padEnd(9)} ${result.requests.average.toFixed(0)} req/s, per call: gateway ` +
          `${(gatewayCpu / total).toFixed(0)} µs, backend ${((cpuMicros(backend.pid) - before.backend) / total).toFixed(0)} µs` +
          ` (${result.non2xx + result.errors} failed)\n`
      )
    }
  }
} finally {
  for (const gateway of gateways) {
    await gateway.child.stop()
    removeDeployment(gateway.deployment)
  }
  await backend.stop()
}
