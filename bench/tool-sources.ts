import { createServer } from "node:http"
import { Duration } from "effect"
import type { HttpEndpoint } from "../src/sources/schema.js"
import { commonTools, startBackend } from "../test/support/mcp-backends.js"
import { startTestGateway } from "../test/support/mcp-gateway.js"
import { keepAliveAgent, sendTimed } from "./support/json-rpc.js"
import { percentile } from "./support/stats.js"
import { formatMs, type Table, verdict } from "./support/table.js"

export const name = "tool-sources"

const WARMUP = 300
const ROUNDS = 10
const PER_ROUND = 200

/**
 * An HTTP tool's call against a backend tool's, end to end through one in-process gateway (the same
 * policy, the same /mcp path, one kept-alive client connection each): `rest__echo` is one HTTP request
 * to a plain JSON service, `beta__echo` is a tools/call to an MCP server built with the MCP SDK. Both
 * services are on loopback HTTP in this process's host (the HTTPS leg of HTTP tools is measured on its
 * own by the `http-tools` suite). Rounds of the two are interleaved, so a machine that gets busier
 * affects both. Issue target: an HTTP tool's call adds no more than a backend tool's.
 */
export const run = async (): Promise<Table> => {
  const backend = await startBackend("beta", (server) => commonTools(server, "beta"))
  const rest = createServer((request, response) => {
    const message = decodeURIComponent((request.url ?? "").replace(/^\/echo\//, ""))
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: `rest:${message}` }))
  })
  await new Promise<void>((done) => rest.listen(0, "127.0.0.1", done))
  const address = rest.address()
  const restPort = typeof address === "object" && address !== null ? address.port : 0
  const endpoint: HttpEndpoint = {
    kind: "http_tool",
    id: "rest",
    allow_insecure_http: true,
    headers: {},
    credentials: undefined,
    required_scopes: [],
    tool_rules: [{ tools: ["*"], publish: true, write: false }],
    naming: { resource_uris: "gateway" },
    timeouts: { call: Duration.seconds(30) },
    max_answer_bytes: 1024 * 1024,
    tools: [
      {
        name: "echo",
        description: "",
        method: "GET",
        url: `http://127.0.0.1:${restPort}/echo/{message}`,
        input_schema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
        argument_headers: {}
      }
    ]
  }
  const gateway = await startTestGateway({
    patch: {
      backends: [{ id: "beta", url: backend.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    },
    sources: { managed: false, http: [endpoint], toolGroups: [] }
  })
  try {
    const token = await gateway.token()
    const headers = {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25"
    }
    const agents = { backend: keepAliveAgent(), http: keepAliveAgent() }
    const call = async (which: "backend" | "http") => {
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: which === "backend" ? "beta__echo" : "rest__echo", arguments: { message: "hi" } }
      })
      const answer = await sendTimed(agents[which], "POST", gateway.mcpUrl, headers, body)
      if (answer.status !== 200 || !answer.body.includes(which === "backend" ? '"text":"hi"' : "rest:hi"))
        throw new Error(`${which}: ${answer.status} ${answer.body.slice(0, 200)}`)
      return answer.ms
    }
    for (let i = 0; i < WARMUP; i++) {
      await call("backend")
      await call("http")
    }
    const times = { backend: [] as Array<number>, http: [] as Array<number> }
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of round % 2 === 0 ? (["backend", "http"] as const) : (["http", "backend"] as const)) {
        for (let i = 0; i < PER_ROUND; i++) times[which].push(await call(which))
      }
    }
    const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length
    const row = (label: string, values: ReadonlyArray<number>) => [
      label,
      formatMs(percentile(values, 50)),
      formatMs(percentile(values, 99)),
      formatMs(mean(values))
    ]
    const ratio = percentile(times.http, 50) / percentile(times.backend, 50)
    return {
      title: "Tool sources: an HTTP tool's call vs a backend tool's, through the gateway (c=1)",
      columns: ["tools/call of", "p50", "p99", "mean"],
      rows: [
        row("backend tool (MCP server)", times.backend),
        row("HTTP tool (JSON service)", times.http),
        ["HTTP / backend (p50)", `${ratio.toFixed(2)}×`, "", verdict(ratio <= 1)]
      ],
      notes: [`${ROUNDS} interleaved rounds of ${PER_ROUND} sequential calls each, after ${WARMUP} of each to warm up.`]
    }
  } finally {
    await gateway.close()
    rest.close()
    await backend.stop()
  }
}
