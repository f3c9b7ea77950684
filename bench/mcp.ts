import { availableParallelism } from "node:os"
import { keepAliveAgent, modernRequest } from "./support/json-rpc.js"
import { backendUrl } from "./support/mcp-backend.js"
import { BACKENDS, DOWN_BACKENDS, FILLER_TOOLS, type McpGateway, startMcpFixture } from "./support/mcp-fixture.js"
import { interleavedLatencies, type Target, throughput, walkToolsList } from "./support/mcp-measure.js"
import { sampleRss } from "./support/rss-sampler.js"
import { median, percentile } from "./support/stats.js"
import { formatCount, formatMb, formatMs, formatShare, type Table, verdict } from "./support/table.js"

export const name = "mcp"

const TARGET_P50_OVERHEAD_MS = 1
const TARGET_P99_OVERHEAD_MS = 3
const TARGET_SHARE = 0.7
const TARGET_LIST_MS = 20
// "Must not grow with the number of backends that are down": equal within measurement noise.
const DOWN_TOLERANCE = 0.1
const DOWN_TOLERANCE_MS = 0.5

const C1 = { warmup: 300, rounds: 10, block: 200 } as const
const C32 = { connections: 32, warmupSeconds: 1, seconds: 4 } as const
const LIST = { warmup: 5, rounds: 10, block: 6 } as const

const echoCall = (url: string, tool: string, token?: string): Target => {
  const { body, headers } = modernRequest("tools/call", { name: tool, arguments: { text: "hello" } }, tool)
  return { url, body, headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` } }
}

const listTools = (gateway: McpGateway, cursor?: string): Target => {
  const { body, headers } = modernRequest("tools/list", cursor === undefined ? {} : { cursor })
  return { url: gateway.mcpUrl, body, headers: { ...headers, authorization: `Bearer ${gateway.token}` } }
}

interface ListFigures {
  readonly p50: number
  readonly p99: number
  readonly tools: number
  readonly peakRssMb: number | undefined
}

/** Full walks of `tools/list` on both gateways, interleaved round by round. */
const measureLists = async (gateways: ReadonlyArray<McpGateway>): Promise<ReadonlyArray<ListFigures>> => {
  const agents = gateways.map(() => keepAliveAgent())
  const samples = gateways.map((): Array<number> => [])
  const tools = gateways.map(() => 0)
  const samplers = gateways.map((gateway) => sampleRss(gateway.child.pid))
  const walk = (at: number) =>
    walkToolsList(listTools(gateways[at]!), agents[at]!, (cursor) => listTools(gateways[at]!, cursor))
  for (const at of gateways.keys()) for (let n = 0; n < LIST.warmup; n++) await walk(at)
  for (let round = 0; round < LIST.rounds; round++) {
    for (const at of gateways.keys()) {
      for (let n = 0; n < LIST.block; n++) {
        const walked = await walk(at)
        samples[at]!.push(walked.ms)
        tools[at] = walked.tools
      }
    }
  }
  for (const agent of agents) agent.destroy()
  return gateways.map((_, at) => ({
    p50: median(samples[at]!),
    p99: percentile(samples[at]!, 99),
    tools: tools[at]!,
    peakRssMb: samplers[at]!.stop()
  }))
}

export const run = async (): Promise<Table> => {
  const fixture = await startMcpFixture()
  try {
    const { gateway, gatewayWithDown } = fixture
    const direct = echoCall(backendUrl(fixture.backendPorts[0]!), "echo")
    const through = echoCall(gateway.mcpUrl, "b0__echo", gateway.token)

    const [directMs = [], gatewayMs = []] = await interleavedLatencies([direct, through], C1)
    const p50 = { direct: median(directMs), gateway: median(gatewayMs) }
    const p99 = { direct: percentile(directMs, 99), gateway: percentile(gatewayMs, 99) }

    const directLoad = await throughput(direct, C32)
    const gatewayLoad = await throughput(through, C32, gateway.child.pid)
    const share = gatewayLoad.requestsPerSecond / directLoad.requestsPerSecond

    const [lists, listsWithDown] = (await measureLists([gateway, gatewayWithDown])) as [ListFigures, ListFigures]
    const downLimit = Math.max(lists.p50 * (1 + DOWN_TOLERANCE), lists.p50 + DOWN_TOLERANCE_MS)
    const listLoad = await throughput(listTools(gateway), C32, gateway.child.pid)

    const expectedTools = BACKENDS * (FILLER_TOOLS + 1)
    const p50Overhead = p50.gateway - p50.direct
    const p99Overhead = p99.gateway - p99.direct
    const peakRss = Math.max(gatewayLoad.peakRssMb ?? 0, lists.peakRssMb ?? 0, listLoad.peakRssMb ?? 0)
    return {
      title: "/mcp: direct to the backend vs through the gateway (2026-07-28 requests)",
      columns: ["measure", "direct", "gateway", "gateway − direct / ÷ direct", "target", "result"],
      rows: [
        [
          "tools/call p50, c=1",
          formatMs(p50.direct),
          formatMs(p50.gateway),
          `+${formatMs(p50Overhead)}`,
          `≤ +${TARGET_P50_OVERHEAD_MS} ms`,
          verdict(p50Overhead <= TARGET_P50_OVERHEAD_MS)
        ],
        [
          "tools/call p99, c=1",
          formatMs(p99.direct),
          formatMs(p99.gateway),
          `+${formatMs(p99Overhead)}`,
          `≤ +${TARGET_P99_OVERHEAD_MS} ms`,
          verdict(p99Overhead <= TARGET_P99_OVERHEAD_MS)
        ],
        [
          `tools/call req/s, c=${C32.connections}`,
          formatCount(directLoad.requestsPerSecond),
          formatCount(gatewayLoad.requestsPerSecond),
          formatShare(gatewayLoad.requestsPerSecond, directLoad.requestsPerSecond),
          `≥ ${TARGET_SHARE * 100}%, no failure`,
          verdict(share >= TARGET_SHARE && directLoad.failed + gatewayLoad.failed === 0)
        ],
        [
          `tools/list, all ${formatCount(lists.tools)} tools of ${BACKENDS} backends, p50 (p99)`,
          "—",
          `${formatMs(lists.p50)} (${formatMs(lists.p99)})`,
          "—",
          `≤ ${TARGET_LIST_MS} ms p50`,
          verdict(lists.p50 <= TARGET_LIST_MS && lists.tools === expectedTools)
        ],
        [
          `same, ${DOWN_BACKENDS} more backends down, p50 (p99)`,
          "—",
          `${formatMs(listsWithDown.p50)} (${formatMs(listsWithDown.p99)})`,
          formatShare(listsWithDown.p50, lists.p50),
          `≤ ${formatMs(downLimit)} (+${DOWN_TOLERANCE * 100}% or +${DOWN_TOLERANCE_MS} ms)`,
          verdict(listsWithDown.p50 <= downLimit && listsWithDown.tools === expectedTools)
        ],
        [
          `tools/list req/s, c=${C32.connections} (first page)`,
          "—",
          formatCount(listLoad.requestsPerSecond),
          "—",
          "no failure",
          verdict(listLoad.failed === 0)
        ],
        ["gateway peak RSS under this load", "—", formatMb(peakRss), "—", "(information)", "—"]
      ],
      notes: [
        `One backend process (server SDK 2.x, ${BACKENDS} MCP servers on loopback ports, ${FILLER_TOOLS + 1} tools ` +
          "each) behind `node dist/main.js serve --dev`, builtin tokens from `gateway dev-token`; requests are " +
          "2026-07-28 (`_meta` envelope, `Mcp-Method`/`Mcp-Name`). c=1: one keep-alive connection, node:http timed " +
          `with process.hrtime, ${C1.rounds} interleaved blocks of ${C1.block} per path after ${C1.warmup} warm-up ` +
          `calls. c=${C32.connections}: autocannon, ${C32.warmupSeconds} s warm-up, ${C32.seconds} s measured. ` +
          `tools/list walks every page (page_size 1000), ${LIST.rounds}×${LIST.block} walks per gateway, interleaved.`,
        `Load generator, backend and gateway share ${availableParallelism()} cores: at c=${C32.connections} the ` +
          "gateway competes for CPU with the backend it forwards to, so the throughput share is a floor."
      ]
    }
  } finally {
    await fixture.close()
  }
}
