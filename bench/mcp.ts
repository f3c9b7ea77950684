import { availableParallelism } from "node:os"
import { startBareProxy } from "./support/bare-proxy.js"
import { freePort } from "./support/http.js"
import { keepAliveAgent, legacyRequest, modernRequest, postTimed, resultOf } from "./support/json-rpc.js"
import { backendUrl } from "./support/mcp-backend.js"
import { BACKENDS, DOWN_BACKENDS, FILLER_TOOLS, type McpGateway, startMcpFixture } from "./support/mcp-fixture.js"
import {
  interleavedCalls,
  interleavedLatencies,
  roundOrder,
  settle,
  type Target,
  type Throughput,
  throughput,
  walkToolsList
} from "./support/mcp-measure.js"
import { sampleRss } from "./support/rss-sampler.js"
import { startStaticPages } from "./support/static-pages.js"
import { median, percentile } from "./support/stats.js"
import { formatCount, formatMb, formatMs, formatShare, type Table, verdict } from "./support/table.js"

export const name = "mcp"

const TARGET_MEAN_OVERHEAD_MS = 0.5
const TARGET_P50_OVERHEAD_MS = 1
const TARGET_P99_OVERHEAD_MS = 3
// The floor (docs/benchmarks.md, "/mcp against a bare proxy"): on two shared cores no Node proxy keeps
// 95 % of direct throughput at c=32, so the gateway is held to the bare proxy's figures instead.
const TARGET_CPU_RATIO_C32 = 1.5
const TARGET_CPU_RATIO_C1 = 1.75
const TARGET_LIST_MS = 20
// "Must not grow with the number of backends that are down": equal within measurement noise.
const DOWN_TOLERANCE = 0.1
const DOWN_TOLERANCE_MS = 0.5
// The gateway's default `catalog.page_size`, which the bench leaves alone.
const PAGE_SIZE = 1000

const C1 = { warmup: 300, rounds: 10, block: 150 } as const
const C32 = { connections: 32, warmupSeconds: 1, seconds: 3, rounds: 2 } as const
/**
 * Before the measured rounds, each path serves this many 1-second c=32 loads, each on 32 new
 * connections: V8 drops and recompiles hot code when a new set of connections first arrives, a few
 * times over before it settles (docs/decisions.md, 2026-11-27, ninth session), which a gateway
 * serving for hours has long done. Every path gets the same.
 */
const C32_SETTLING_LOADS = 4
const LIST = { warmup: 15, rounds: 24, block: 5 } as const

const echoCall = (url: string, tool: string, token?: string): Target => {
  const { body, headers } = modernRequest("tools/call", { name: tool, arguments: { text: "hello" } }, tool)
  return { url, body, headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` } }
}

/** A 2025-era streaming call: 10 progress notifications and 10 log messages, then the result (SSE). */
const STREAMED = 10
const STREAM = { warmup: 100, rounds: 6, block: 50 } as const
const streamingCall = (url: string, tool: string, token?: string): Target => {
  const { body, headers } = legacyRequest("tools/call", {
    name: tool,
    arguments: { text: "hello", notify: STREAMED },
    _meta: { progressToken: "p" }
  })
  return { url, body, headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` } }
}

const legacyEchoCall = (url: string, tool: string, token?: string): Target => {
  const { body, headers } = legacyRequest("tools/call", { name: tool, arguments: { text: "hello" } })
  return { url, body, headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` } }
}

/** Where `tools/list` is walked: a gateway, or the static floor serving the pages it answered. */
interface ListTarget {
  readonly mcpUrl: string
  readonly token: string
  readonly pid: number
}

const listTarget = (gateway: McpGateway): ListTarget => ({
  mcpUrl: gateway.mcpUrl,
  token: gateway.token,
  pid: gateway.child.pid
})

const listTools = (gateway: ListTarget, cursor?: string): Target => {
  const { body, headers } = modernRequest("tools/list", cursor === undefined ? {} : { cursor })
  return { url: gateway.mcpUrl, body, headers: { ...headers, authorization: `Bearer ${gateway.token}` } }
}

/** Runs of one path together: mean req/s, every failure, the highest RSS. */
const combined = (runs: ReadonlyArray<Throughput>): Throughput => {
  const cpu = runs.flatMap((run) => (run.cpuMicrosPerCall === undefined ? [] : [run.cpuMicrosPerCall]))
  return {
    requestsPerSecond: runs.reduce((sum, run) => sum + run.requestsPerSecond, 0) / runs.length,
    failed: runs.reduce((sum, run) => sum + run.failed, 0),
    peakRssMb: Math.max(...runs.map((run) => run.peakRssMb ?? 0)) || undefined,
    cpuMicrosPerCall: cpu.length === 0 ? undefined : cpu.reduce((sum, value) => sum + value, 0) / cpu.length
  }
}

/** The lowest and highest req/s of one path's runs: how far one 3-second run is from the next on this machine. */
const spread = (runs: ReadonlyArray<Throughput>) => {
  const rates = runs.map((run) => run.requestsPerSecond)
  return `runs ${formatCount(Math.min(...rates))}–${formatCount(Math.max(...rates))}`
}

const formatMicros = (micros: number) => `${micros.toFixed(0)} µs`
const formatRatio = (value: number, baseline: number) => `${(value / baseline).toFixed(2)}×`

interface ListFigures {
  /** One request: the first page. */
  readonly pageP50: number
  /** Every page, one after the other. */
  readonly walkP50: number
  readonly walkP99: number
  readonly tools: number
  readonly peakRssMb: number | undefined
}

/** Every page the gateway answers for a whole walk, by the cursor that asks for it ("" for the first). */
const capturePages = async (gateway: ListTarget): Promise<ReadonlyMap<string, string>> => {
  const agent = keepAliveAgent()
  const pages = new Map<string, string>()
  let cursor: string | undefined
  try {
    do {
      const target = listTools(gateway, cursor)
      const answered = await postTimed(agent, target.url, target.body, target.headers)
      pages.set(cursor ?? "", answered.body)
      const next = resultOf(answered)["nextCursor"]
      cursor = typeof next === "string" ? next : undefined
    } while (cursor !== undefined)
  } finally {
    agent.destroy()
  }
  return pages
}

/** Full walks of `tools/list` on each target, interleaved round by round. */
const measureLists = async (gateways: ReadonlyArray<ListTarget>): Promise<ReadonlyArray<ListFigures>> => {
  const agents = gateways.map(() => keepAliveAgent())
  const walks = gateways.map((): Array<number> => [])
  const pages = gateways.map((): Array<number> => [])
  const tools = gateways.map(() => 0)
  const samplers = gateways.map((gateway) => sampleRss(gateway.pid))
  const walk = (at: number) =>
    walkToolsList(listTools(gateways[at]!), agents[at]!, (cursor) => listTools(gateways[at]!, cursor))
  for (const at of gateways.keys()) for (let n = 0; n < LIST.warmup; n++) await walk(at)
  for (let round = 0; round < LIST.rounds; round++) {
    for (const at of roundOrder(gateways.length, round)) {
      for (let n = 0; n < LIST.block; n++) {
        const walked = await walk(at)
        walks[at]!.push(walked.ms)
        pages[at]!.push(walked.firstPageMs)
        tools[at] = walked.tools
      }
    }
  }
  for (const agent of agents) agent.destroy()
  return gateways.map((_, at) => ({
    pageP50: median(pages[at]!),
    walkP50: median(walks[at]!),
    walkP99: percentile(walks[at]!, 99),
    tools: tools[at]!,
    peakRssMb: samplers[at]!.stop()
  }))
}

export const run = async (): Promise<Table> => {
  const fixture = await startMcpFixture()
  const proxyPort = await freePort()
  const parsingPort = await freePort()
  const backendOrigin = `http://127.0.0.1:${fixture.backendPorts[0]!}`
  const proxies = await Promise.all([
    startBareProxy(proxyPort, backendOrigin),
    startBareProxy(parsingPort, backendOrigin, "parsing")
  ]).catch(async (error: unknown) => {
    await fixture.close()
    throw error
  })
  const [proxy, parsingProxy] = proxies
  try {
    const { gateway, gatewayWithDown } = fixture
    const direct = echoCall(backendUrl(fixture.backendPorts[0]!), "echo")
    const bare = { ...echoCall(`http://127.0.0.1:${proxyPort}/mcp`, "echo"), pid: proxy.pid }
    const parsing = { ...echoCall(`http://127.0.0.1:${parsingPort}/mcp`, "echo"), pid: parsingProxy.pid }
    const through = { ...echoCall(gateway.mcpUrl, "b0__echo", gateway.token), pid: gateway.child.pid }

    // Lists first, while both gateways have served nothing but their warm-up: a gateway that has just
    // served thousands of calls runs with hotter compiled code than one that has not, which the
    // comparison between the two must not measure.
    // The floor beside them: a static server answering each page with the gateway's own bytes (the other
    // gateway walked once too, so both have served the same before the measured walks).
    const pagesServed = await capturePages(listTarget(gateway))
    await capturePages(listTarget(gatewayWithDown))
    const floor = await startStaticPages(await freePort(), pagesServed)
    const [lists, listsWithDown, listsFloor] = (await measureLists([
      listTarget(gateway),
      listTarget(gatewayWithDown),
      { mcpUrl: `http://127.0.0.1:${floor.port}/mcp`, token: "", pid: floor.child.pid }
    ]).finally(() => floor.stop())) as [ListFigures, ListFigures, ListFigures]
    const downLimit = (p50: number) => Math.max(p50 * (1 + DOWN_TOLERANCE), p50 + DOWN_TOLERANCE_MS)

    const directLegacy = legacyEchoCall(backendUrl(fixture.backendPorts[0]!), "echo")
    const throughLegacy = legacyEchoCall(gateway.mcpUrl, "b0__echo", gateway.token)
    const [directCalls, bareCalls, gatewayCalls, legacyDirectCalls, legacyGatewayCalls, parsingCalls] =
      await interleavedCalls([direct, bare, through, directLegacy, throughLegacy, parsing], C1)
    const directMs = directCalls?.ms ?? []
    const gatewayMs = gatewayCalls?.ms ?? []
    const legacyDirectMs = legacyDirectCalls?.ms ?? []
    const legacyGatewayMs = legacyGatewayCalls?.ms ?? []
    const cpuC1 = {
      bare: bareCalls?.cpuMicrosPerCall ?? 0,
      parsing: parsingCalls?.cpuMicrosPerCall ?? 0,
      gateway: gatewayCalls?.cpuMicrosPerCall ?? 0
    }
    const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length
    // The bare proxy's own latency, interleaved with the others: what one more loopback hop costs here
    // (the gateway's overhead cannot be less), shown beside the gateway's for reading the targets.
    const bareMs = bareCalls?.ms ?? []
    const parsingMs = parsingCalls?.ms ?? []
    const means = { direct: mean(directMs), gateway: mean(gatewayMs), bare: mean(bareMs), parsing: mean(parsingMs) }
    const meanOverhead = means.gateway - means.direct
    const p50 = { direct: median(directMs), gateway: median(gatewayMs), bare: median(bareMs) }
    const p99 = { direct: percentile(directMs, 99), gateway: percentile(gatewayMs, 99), bare: percentile(bareMs, 99) }
    const legacy = {
      p50: { direct: median(legacyDirectMs), gateway: median(legacyGatewayMs) },
      p99: { direct: percentile(legacyDirectMs, 99), gateway: percentile(legacyGatewayMs, 99) }
    }
    const legacyP50Overhead = legacy.p50.gateway - legacy.p50.direct
    const legacyP99Overhead = legacy.p99.gateway - legacy.p99.direct

    // Relaying notifications: the same call, streaming 10 progress and 10 log notifications before its result.
    const [streamDirectMs = [], streamGatewayMs = []] = await interleavedLatencies(
      [
        streamingCall(backendUrl(fixture.backendPorts[0]!), "echo"),
        streamingCall(gateway.mcpUrl, "b0__echo", gateway.token)
      ],
      STREAM
    )
    const stream = { direct: median(streamDirectMs), gateway: median(streamGatewayMs) }
    const streamOverhead = stream.gateway - stream.direct

    for (const target of [direct, bare, parsing, through]) {
      for (let load = 0; load < C32_SETTLING_LOADS; load++) await settle(target, C32.connections)
    }
    // ABBA: whichever runs first meets a colder backend, so each path runs once early and once late;
    // repeated, because on a shared machine one 3-second run can differ from the next by a fifth.
    const directRuns: Array<Throughput> = []
    const bareRuns: Array<Throughput> = []
    const gatewayRuns: Array<Throughput> = []
    const parsingRuns: Array<Throughput> = []
    for (let round = 0; round < C32.rounds; round++) {
      directRuns.push(await throughput(direct, C32))
      bareRuns.push(await throughput(bare, C32))
      parsingRuns.push(await throughput(parsing, C32))
      gatewayRuns.push(await throughput(through, C32))
      gatewayRuns.push(await throughput(through, C32))
      parsingRuns.push(await throughput(parsing, C32))
      bareRuns.push(await throughput(bare, C32))
      directRuns.push(await throughput(direct, C32))
    }
    const directLoad = combined(directRuns)
    const bareLoad = combined(bareRuns)
    const gatewayLoad = combined(gatewayRuns)
    const parsingLoad = combined(parsingRuns)
    const failures = directLoad.failed + bareLoad.failed + gatewayLoad.failed + parsingLoad.failed
    const cpuC32 = {
      bare: bareLoad.cpuMicrosPerCall ?? 0,
      parsing: parsingLoad.cpuMicrosPerCall ?? 0,
      gateway: gatewayLoad.cpuMicrosPerCall ?? 0
    }
    const listLoad = await throughput(listTools(listTarget(gateway)), C32, gateway.child.pid)

    const expectedTools = BACKENDS * (FILLER_TOOLS + 1)
    const p50Overhead = p50.gateway - p50.direct
    const p99Overhead = p99.gateway - p99.direct
    return {
      title: "/mcp: direct to the backend vs through the gateway (2026-07-28 requests)",
      columns: ["measure", "direct", "bare proxy", "gateway", "gateway − baseline / ÷ baseline", "target", "result"],
      rows: [
        [
          "tools/call mean, c=1",
          formatMs(means.direct),
          `${formatMs(means.bare)} (+${formatMs(means.bare - means.direct)}; parsing proxy +${formatMs(means.parsing - means.direct)})`,
          formatMs(means.gateway),
          `+${formatMs(meanOverhead)}`,
          `≤ +${TARGET_MEAN_OVERHEAD_MS} ms`,
          verdict(meanOverhead <= TARGET_MEAN_OVERHEAD_MS)
        ],
        [
          "tools/call p50, c=1",
          formatMs(p50.direct),
          `${formatMs(p50.bare)} (+${formatMs(p50.bare - p50.direct)})`,
          formatMs(p50.gateway),
          `+${formatMs(p50Overhead)}`,
          `≤ +${TARGET_P50_OVERHEAD_MS} ms`,
          verdict(p50Overhead <= TARGET_P50_OVERHEAD_MS)
        ],
        [
          "tools/call p99, c=1",
          formatMs(p99.direct),
          `${formatMs(p99.bare)} (+${formatMs(p99.bare - p99.direct)})`,
          formatMs(p99.gateway),
          `+${formatMs(p99Overhead)}`,
          `≤ +${TARGET_P99_OVERHEAD_MS} ms`,
          verdict(p99Overhead <= TARGET_P99_OVERHEAD_MS)
        ],
        [
          "same, 2025-era request: p50",
          formatMs(legacy.p50.direct),
          "—",
          formatMs(legacy.p50.gateway),
          `${legacyP50Overhead < 0 ? "−" : "+"}${formatMs(Math.abs(legacyP50Overhead))}`,
          `≤ +${TARGET_P50_OVERHEAD_MS} ms`,
          verdict(legacyP50Overhead <= TARGET_P50_OVERHEAD_MS)
        ],
        [
          "same, 2025-era request: p99",
          formatMs(legacy.p99.direct),
          "—",
          formatMs(legacy.p99.gateway),
          `${legacyP99Overhead < 0 ? "−" : "+"}${formatMs(Math.abs(legacyP99Overhead))}`,
          `≤ +${TARGET_P99_OVERHEAD_MS} ms`,
          verdict(legacyP99Overhead <= TARGET_P99_OVERHEAD_MS)
        ],
        [
          `streaming tools/call p50, c=1 (${STREAMED} progress + ${STREAMED} log notifications, 2025-era)`,
          formatMs(stream.direct),
          "—",
          formatMs(stream.gateway),
          `${streamOverhead < 0 ? "−" : "+"}${formatMs(Math.abs(streamOverhead))}`,
          "(information)",
          "—"
        ],
        [
          `tools/call req/s, c=${C32.connections}`,
          `${formatCount(directLoad.requestsPerSecond)} (${spread(directRuns)})`,
          `${formatCount(bareLoad.requestsPerSecond)} (${spread(bareRuns)})`,
          `${formatCount(gatewayLoad.requestsPerSecond)} (${spread(gatewayRuns)})`,
          `${formatShare(gatewayLoad.requestsPerSecond, bareLoad.requestsPerSecond)} of proxy, ${formatShare(gatewayLoad.requestsPerSecond, directLoad.requestsPerSecond)} of direct`,
          "≥ bare proxy, no failure",
          verdict(gatewayLoad.requestsPerSecond >= bareLoad.requestsPerSecond && failures === 0)
        ],
        [
          `CPU per tools/call, c=${C32.connections} (proxy process vs gateway process)`,
          "—",
          formatMicros(cpuC32.bare),
          formatMicros(cpuC32.gateway),
          formatRatio(cpuC32.gateway, cpuC32.bare),
          `≤ ${TARGET_CPU_RATIO_C32}× proxy`,
          verdict(cpuC32.gateway <= TARGET_CPU_RATIO_C32 * cpuC32.bare)
        ],
        [
          `same, a proxy that parses both messages and checks nothing (the floor of any deciding gateway), c=${C32.connections}`,
          "—",
          formatMicros(cpuC32.bare),
          `${formatMicros(cpuC32.parsing)} (${formatCount(parsingLoad.requestsPerSecond)} req/s)`,
          `${formatRatio(cpuC32.parsing, cpuC32.bare)}; gateway ${formatRatio(cpuC32.gateway, cpuC32.parsing)} of it`,
          "(information)",
          "—"
        ],
        [
          "CPU per tools/call, c=1",
          "—",
          formatMicros(cpuC1.bare),
          formatMicros(cpuC1.gateway),
          formatRatio(cpuC1.gateway, cpuC1.bare),
          `≤ ${TARGET_CPU_RATIO_C1}× proxy`,
          verdict(cpuC1.gateway <= TARGET_CPU_RATIO_C1 * cpuC1.bare)
        ],
        [
          "same, the proxy that parses both messages, c=1",
          "—",
          formatMicros(cpuC1.bare),
          formatMicros(cpuC1.parsing),
          `${formatRatio(cpuC1.parsing, cpuC1.bare)}; gateway ${formatRatio(cpuC1.gateway, cpuC1.parsing)} of it`,
          "(information)",
          "—"
        ],
        [
          `tools/list p50, one request (first ${formatCount(PAGE_SIZE)} of ${formatCount(lists.tools)} tools)`,
          "—",
          "—",
          formatMs(lists.pageP50),
          "—",
          `≤ ${TARGET_LIST_MS} ms`,
          verdict(lists.pageP50 <= TARGET_LIST_MS)
        ],
        [
          `tools/list p50 (p99), all ${formatCount(lists.tools)} tools of ${BACKENDS} backends (${Math.ceil(lists.tools / PAGE_SIZE)} requests)`,
          "—",
          "—",
          `${formatMs(lists.walkP50)} (${formatMs(lists.walkP99)})`,
          "—",
          `≤ ${TARGET_LIST_MS} ms`,
          verdict(lists.walkP50 <= TARGET_LIST_MS && lists.tools === expectedTools)
        ],
        [
          "same pages from a static server (bench/support/static-pages-main.ts: the floor of reading them here), one request / all",
          "—",
          `${formatMs(listsFloor.pageP50)} / ${formatMs(listsFloor.walkP50)} (${formatMs(listsFloor.walkP99)})`,
          `${formatMs(lists.pageP50)} / ${formatMs(lists.walkP50)}`,
          `+${formatMs(lists.pageP50 - listsFloor.pageP50)} / +${formatMs(lists.walkP50 - listsFloor.walkP50)}`,
          "(information)",
          "—"
        ],
        [
          `same, ${DOWN_BACKENDS} more backends down: one request`,
          "—",
          "—",
          formatMs(listsWithDown.pageP50),
          formatShare(listsWithDown.pageP50, lists.pageP50),
          `≤ ${formatMs(downLimit(lists.pageP50))} (+${DOWN_TOLERANCE * 100}% or +${DOWN_TOLERANCE_MS} ms)`,
          verdict(listsWithDown.pageP50 <= downLimit(lists.pageP50))
        ],
        [
          `same, ${DOWN_BACKENDS} more backends down: all tools`,
          "—",
          "—",
          formatMs(listsWithDown.walkP50),
          formatShare(listsWithDown.walkP50, lists.walkP50),
          `≤ ${formatMs(downLimit(lists.walkP50))}`,
          verdict(listsWithDown.walkP50 <= downLimit(lists.walkP50) && listsWithDown.tools === expectedTools)
        ],
        [
          `tools/list req/s, c=${C32.connections} (first page)`,
          "—",
          "—",
          formatCount(listLoad.requestsPerSecond),
          "—",
          "no failure",
          verdict(listLoad.failed === 0)
        ],
        [
          `gateway peak RSS, tools/call c=${C32.connections}`,
          "—",
          "—",
          formatMb(gatewayLoad.peakRssMb),
          "—",
          "(information)",
          "—"
        ],
        [
          `gateway peak RSS, tools/list c=${C32.connections}`,
          "—",
          "—",
          formatMb(Math.max(lists.peakRssMb ?? 0, listLoad.peakRssMb ?? 0)),
          "—",
          "(information)",
          "—"
        ]
      ],
      notes: [
        `One backend process (server SDK 2.x, ${BACKENDS} MCP servers on loopback ports, ${FILLER_TOOLS + 1} tools ` +
          "each) behind `node dist/main.js serve --dev`, builtin tokens from `gateway dev-token` whose user sees every " +
          "tool through a stored permission group (the access policy on); requests are " +
          "2026-07-28 (`_meta` envelope, `Mcp-Method`/`Mcp-Name`) except the 2025-era rows (no envelope, " +
          "`MCP-Protocol-Version: 2025-11-25`; the backend answers those as SSE). c=1: one keep-alive connection, node:http timed " +
          `with process.hrtime, ${C1.rounds} interleaved blocks of ${C1.block} per path after ${C1.warmup} warm-up ` +
          `calls. c=${C32.connections}: autocannon; first ${C32_SETTLING_LOADS} unmeasured 1-second loads per path, each on new connections; then ${C32.warmupSeconds} s warm-up, ${C32.seconds} s measured, ${2 * C32.rounds} times per path (ABBA × ${C32.rounds}), mean. ` +
          `tools/list walks every page (default page_size ${PAGE_SIZE}), ${LIST.rounds}×${LIST.block} walks per gateway, interleaved (ABBA).`,
        `Load generator, backend and gateway share ${availableParallelism()} cores: at c=${C32.connections} the ` +
          "gateway competes for CPU with the backend it forwards to. The bare proxy (bench/support/bare-proxy-main.ts: " +
          "node:http piping bytes over a keep-alive agent, parsing nothing) is the floor any Node proxy pays here, " +
          "measured in the same run; CPU per call is utime + stime of the proxy's or the gateway's process " +
          "(/proc/<pid>/stat) over the measured calls, divided by the calls answered. The parsing proxy " +
          "(bench/support/parsing-proxy-main.ts) checks nothing either, but reads both messages whole and parses and " +
          "re-serializes them, with undici to the backend as the gateway: the price of reading JSON-RPC at all."
      ]
    }
  } finally {
    await Promise.all(proxies.map((each) => each.stop()))
    await fixture.close()
  }
}
