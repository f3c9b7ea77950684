/**
 * Traces (docs/operations.md, "Traces"): exported with OTLP over HTTP and decoded here with the OTLP
 * protobuf definitions — one trace per request, the decision span carrying the outcome, the backend
 * receiving the backend call's `traceparent`, a client's `traceparent` continued only when trusted, nothing
 * secret in any attribute; and a collector that is down or slow costs spans (counted), never requests.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as z from "zod/v4"
import { metrics } from "../../src/observability/metrics.js"
import {
  approvalIdOf,
  browserOf,
  deploy,
  type OpsBackend,
  person,
  resume,
  review,
  startApprovalGateway,
  startOps
} from "../support/approvals.js"
import { freePort } from "../support/gateway-process.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js"
import { sampleValue } from "../support/prometheus.js"

const BACKEND_SECRET = "backend-secret-canary-7f3a"
const ARGUMENT_CANARY = "argument-canary-91b2"

let alpha: TestBackend
/** A backend whose tool declares an `Mcp-Param-*` header: its calls go through the gateway's MCP client. */
let regional: TestBackend
let receiver: OtlpReceiver

const backends = () => [
  {
    id: "alpha",
    url: alpha.url,
    allow_insecure_http: true,
    credentials: { type: "bearer", token: BACKEND_SECRET },
    tool_rules: [{ tools: ["*"] }]
  },
  { id: "regional", url: regional.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
]

const callTool = (
  gateway: TestGateway,
  token: string,
  params: Record<string, unknown>,
  headers: Record<string, string> = {}
) =>
  rawPost(gateway.mcpUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params }), {
    "mcp-protocol-version": "2025-11-25",
    authorization: `Bearer ${token}`,
    ...headers
  }).then(jsonRpcOf)

const call = (gateway: TestGateway, token: string, message: string, headers: Record<string, string> = {}) =>
  callTool(gateway, token, { name: "alpha__echo", arguments: { message } }, headers)

const lookup = (gateway: TestGateway, token: string, headers: Record<string, string> = {}) =>
  callTool(gateway, token, { name: "regional__lookup", arguments: { region: "eu-west", q: "x" } }, headers)

/** The headers of the last `tools/call` a backend received since `since` requests. */
const lastCallHeaders = (backend: TestBackend, since: number) =>
  backend.requests.slice(since).findLast((request) => request.body.includes('"tools/call"'))?.headers ?? {}

const dropped = async (reason: string) =>
  sampleValue(await metrics.exposition(), "gateway_trace_spans_dropped_total", { reason })

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  regional = await startBackend("regional", (server) => {
    server.registerTool(
      "lookup",
      { inputSchema: z.object({ region: z.string().meta({ "x-mcp-header": "Region" }), q: z.string() }) },
      async ({ region, q }) => ({ content: [{ type: "text", text: `${region}:${q}` }] })
    )
  })
  receiver = await startOtlpReceiver()
})
afterAll(async () => {
  await receiver?.stop()
  await alpha?.stop()
  await regional?.stop()
})

describe("traces exported over OTLP/HTTP", () => {
  let gateway: TestGateway
  beforeAll(async () => {
    gateway = await startTestGateway({
      patch: { backends: backends(), observability: { otlp_endpoint: receiver.url, service_instance_id: "test-1" } }
    })
  })
  afterAll(async () => {
    await gateway?.close()
  })

  it("makes one trace per request: the request's server span, the decision with its outcome, the backend call", async () => {
    const token = await gateway.token()
    const answers = [await call(gateway, token, "first"), await call(gateway, token, "second")]
    expect(answers.map((answer) => answer["result"])).toEqual([
      { content: [{ type: "text", text: "first" }] },
      { content: [{ type: "text", text: "second" }] }
    ])
    const spans = await receiver.waitFor(
      (all) => all.filter((span) => span.name === "tools/call alpha__echo").length >= 2
    )
    const roots = spans.filter(
      (span) => span.name === "POST /mcp" && span.attributes["mcp.method.name"] === "tools/call"
    )
    expect(roots.length).toBeGreaterThanOrEqual(2)
    // Each request's trace is its own, with one root: the server span.
    expect(new Set(roots.map((span) => span.traceId)).size).toBe(roots.length)
    for (const root of roots.slice(-2)) {
      const trace = spans.filter((span) => span.traceId === root.traceId)
      expect(trace.filter((span) => span.parentSpanId === "")).toEqual([root])
      expect(root).toMatchObject({
        kind: 2,
        attributes: { "http.request.method": "POST", "http.route": "/mcp", "http.response.status_code": 200 },
        resource: { "service.name": "gateway", "service.instance.id": "test-1" }
      })
      const decision = trace.find((span) => span.name === "policy.decide")
      expect(decision).toMatchObject({
        parentSpanId: root.spanId,
        attributes: { "gateway.policy.outcome": "allow", "gen_ai.tool.name": "alpha__echo" }
      })
      const backendCall = trace.find((span) => span.name === "tools/call alpha__echo")
      expect(backendCall).toMatchObject({
        parentSpanId: root.spanId,
        kind: 3,
        attributes: { "gateway.backend.id": "alpha", "mcp.method.name": "tools/call" }
      })
    }
  })

  it("sends the backend the backend call's traceparent: the backend's spans join the same trace", async () => {
    const seen = alpha.requests.length
    await call(gateway, await gateway.token(), "traced")
    const sent = alpha.requests.slice(seen).find((request) => request.body.includes('"tools/call"'))
    const traceparent = String(sent?.headers["traceparent"] ?? "")
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traceparent)
    expect(match).not.toBeNull()
    const spans = await receiver.waitFor((all) => all.some((span) => span.spanId === match![2]))
    const backendCall = spans.find((span) => span.spanId === match![2])
    expect(backendCall).toMatchObject({ name: "tools/call alpha__echo", traceId: match![1] })
  })

  it("sends the traceparent on the MCP client's path too (a tool with Mcp-Param headers): the same trace", async () => {
    const seen = regional.requests.length
    const answer = await lookup(gateway, await gateway.token())
    expect(answer["result"]).toEqual({ content: [{ type: "text", text: "eu-west:x" }] })
    const headers = lastCallHeaders(regional, seen)
    // The MCP client built the Mcp-Param header: this call took the client's path, not the channel's.
    expect(headers["mcp-param-region"]).toBe("eu-west")
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(headers["traceparent"] ?? ""))
    expect(match).not.toBeNull()
    expect(headers["tracestate"]).toBeUndefined()
    const spans = await receiver.waitFor((all) => all.some((span) => span.spanId === match![2]))
    const backendCall = spans.find((span) => span.spanId === match![2])
    expect(backendCall).toMatchObject({
      name: "tools/call regional__lookup",
      traceId: match![1],
      attributes: { "gateway.backend.id": "regional" }
    })
    // The backend call's span is a child of the request's server span, in the same trace.
    const root = spans.find((span) => span.spanId === backendCall?.parentSpanId)
    expect(root).toMatchObject({ name: "POST /mcp", traceId: match![1] })
  })

  it("starts a new trace for a client's traceparent unless trust_incoming_trace is on", async () => {
    const incoming = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" }
    const header = { traceparent: `00-${incoming.traceId}-${incoming.spanId}-01` }
    await call(gateway, await gateway.token(), "untrusted", header)
    const trusting = await startTestGateway({
      patch: { backends: backends(), observability: { otlp_endpoint: receiver.url, trust_incoming_trace: true } }
    })
    try {
      const token = await trusting.token()
      await call(trusting, token, "trusted", header)
      const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === incoming.traceId))
      const continued = spans.filter((span) => span.traceId === incoming.traceId)
      expect(continued.find((span) => span.name === "POST /mcp")).toMatchObject({ parentSpanId: incoming.spanId })
      // The untrusting gateway's request spans never joined it: exactly one server span did (the trusting one's).
      expect(continued.filter((span) => span.name === "POST /mcp")).toHaveLength(1)
      // A trusted client's tracestate goes on to the backend with the call's traceparent, on both paths.
      const tracestate = "vendor=opaque-1,other=2"
      const withState = { ...header, tracestate }
      for (const [backend, send] of [
        [alpha, () => call(trusting, token, "state", withState)],
        [regional, () => lookup(trusting, token, withState)]
      ] as const) {
        const seen = backend.requests.length
        await send()
        const sent = lastCallHeaders(backend, seen)
        expect(String(sent["traceparent"])).toMatch(new RegExp(`^00-${incoming.traceId}-[0-9a-f]{16}-01$`))
        expect(sent["tracestate"]).toBe(tracestate)
      }
      // A malformed traceparent is no parent: a new root.
      await call(trusting, await trusting.token(), "malformed", { traceparent: "00-zz-00f067aa0ba902b7-01" })
    } finally {
      await trusting.close()
    }
  })

  it("exports no token, secret or argument value in any span", async () => {
    const token = await gateway.token()
    await call(gateway, token, ARGUMENT_CANARY)
    await receiver.waitFor((all) => all.filter((span) => span.name === "tools/call alpha__echo").length >= 4)
    // Flushed: the batch holding the canary call has left.
    await new Promise((done) => setTimeout(done, 1_500))
    const exported = Buffer.concat(receiver.bodies()).toString("latin1")
    for (const canary of [token, token.split(".")[2]!, BACKEND_SECRET, ARGUMENT_CANARY]) {
      expect(exported).not.toContain(canary)
    }
    const values = receiver.spans().flatMap((span: ReceivedSpan) => Object.values(span.attributes).map(String))
    expect(values.some((value) => value.includes(ARGUMENT_CANARY) || value.includes(BACKEND_SECRET))).toBe(false)
  })
})

describe("an approved write executed by gateway_resume_approval", () => {
  let ops: OpsBackend
  let gateway: TestGateway
  beforeAll(async () => {
    ops = await startOps()
    gateway = await startApprovalGateway(ops, {}, { patch: { observability: { otlp_endpoint: receiver.url } } })
  })
  afterAll(async () => {
    await gateway?.close()
    await ops?.stop()
  })

  it("sends the backend its own call span's traceparent, in the trace of the resuming request", async () => {
    const requester = await person(gateway)
    const reviewer = await person(gateway, { approver: true, tools: false })
    const id = `op-traced-${Date.now()}`
    const approvalId = approvalIdOf(
      await deploy(gateway, requester.token, { operation_id: id, environment: "staging", version: "3.0" })
    )
    expect(
      (await review(gateway, (await browserOf(gateway, reviewer.userId)).cookie, approvalId, "approve")).status
    ).toBe(303)
    const seen = ops.requests.length
    const done = await resume(gateway, requester.token, approvalId)
    expect(done.structuredContent).toMatchObject({ deployed: "3.0" })
    const sent = lastCallHeaders(ops, seen)
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(sent["traceparent"] ?? ""))
    expect(match).not.toBeNull()
    const spans = await receiver.waitFor((all) => all.some((span) => span.spanId === match![2]))
    const execution = spans.find((span) => span.spanId === match![2])
    expect(execution).toMatchObject({
      name: "tools/call ops__deploy",
      traceId: match![1],
      attributes: { "gateway.backend.id": "ops" }
    })
    expect(spans.find((span) => span.spanId === execution?.parentSpanId)).toMatchObject({
      name: "POST /mcp",
      traceId: match![1]
    })
  })
})

describe("a collector that is down or slow", () => {
  it("leaves requests unaffected when nothing listens at the endpoint, and counts the spans dropped", async () => {
    const closed = await freePort()
    const before = await dropped("export_failed")
    const gateway = await startTestGateway({
      patch: { backends: backends(), observability: { otlp_endpoint: `http://127.0.0.1:${closed}/v1/traces` } }
    })
    try {
      const token = await gateway.token()
      for (let i = 0; i < 5; i++) {
        expect((await call(gateway, token, `down ${i}`))["result"]).toBeDefined()
      }
      const until = Date.now() + 10_000
      while ((await dropped("export_failed")) - before < 15 && Date.now() < until) {
        await new Promise((done) => setTimeout(done, 100))
      }
      // Five requests of three spans each, none exported.
      expect((await dropped("export_failed")) - before).toBeGreaterThanOrEqual(15)
    } finally {
      await gateway.close()
    }
  })

  it("answers at full speed while the collector hangs, dropping what the bounded queue cannot hold", async () => {
    const slow = await startOtlpReceiver({ delayMs: 30_000 })
    const before = await dropped("queue_full")
    const gateway = await startTestGateway({
      patch: { backends: backends(), observability: { otlp_endpoint: slow.url, trace_queue_size: 64 } }
    })
    try {
      const token = await gateway.token()
      const started = performance.now()
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => call(gateway, token, `slow ${i}`)))
      const elapsed = performance.now() - started
      expect(answers.every((answer) => answer["result"] !== undefined)).toBe(true)
      // The export waits 30 s; the requests do not wait for it.
      expect(elapsed).toBeLessThan(10_000)
      // 60 requests make 180 spans; the queue holds 64 and one export takes 64 more at most.
      expect((await dropped("queue_full")) - before).toBeGreaterThanOrEqual(180 - 128)
    } finally {
      await gateway.close()
      await slow.stop()
    }
  })
})
