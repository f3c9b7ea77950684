/**
 * `/metrics` (docs/operations.md, "Metrics"): served on the loopback admin listener and never on the
 * public one, valid for Prometheus's own checker, and moved by exactly the calls a scripted workload
 * makes; label values stay bounded whatever a client sends.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../support/gateway-process.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"
import { promtoolCheck, samples, sampleValue, scrape } from "../support/prometheus.js"

let alpha: TestBackend
let gateway: TestGateway
let admin: string

beforeAll(async () => {
  alpha = await startBackend("alpha", alphaTools)
  const closed = await freePort()
  gateway = await startTestGateway({
    adminListener: true,
    patch: {
      backends: [
        { id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
        // Nothing listens there: an optional backend that stays unavailable.
        { id: "gone", url: `http://127.0.0.1:${closed}/mcp`, allow_insecure_http: true, required: false }
      ]
    }
  })
  admin = gateway.adminUrl!
})
afterAll(async () => {
  await gateway?.close()
  await alpha?.stop()
})

describe("/metrics", () => {
  it("is served on the admin listener, and the public listener answers 404 for it", async () => {
    const response = await fetch(`${admin}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/plain")
    expect(await response.text()).toContain("# TYPE gateway_http_requests_total counter")
    const publicSide = await fetch(`${gateway.baseUrl}/metrics`)
    expect(publicSide.status).toBe(404)
    expect(await publicSide.text()).not.toContain("gateway_")
  })

  it("passes promtool check metrics after a workload", async () => {
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    await client.callTool({ name: "alpha__echo", arguments: { message: "hi" } })
    await client.close()
    const checked = await promtoolCheck(await scrape(admin))
    expect(checked.output).toBe("")
    expect(checked.code).toBe(0)
  })

  it("moves the counters by exactly the calls made", async () => {
    const before = await scrape(admin)
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    for (const message of ["one", "two", "three"]) {
      await client.callTool({ name: "alpha__echo", arguments: { message } })
    }
    await expect(client.callTool({ name: "alpha__nope", arguments: {} })).rejects.toThrow()
    await client.listTools()
    await client.listTools()
    await client.close()
    const after = await scrape(admin)
    const moved = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels)

    expect(moved("gateway_tool_calls_total", { backend: "alpha", tool: "alpha__echo", outcome: "ok" })).toBe(3)
    expect(moved("gateway_tool_call_duration_seconds_count", { backend: "alpha", outcome: "ok" })).toBe(3)
    expect(moved("gateway_policy_decisions_total", { outcome: "allow", reason: "allowed" })).toBe(3)
    expect(moved("gateway_mcp_request_duration_seconds_count", { method: "tools/call" })).toBe(4)
    expect(moved("gateway_mcp_request_duration_seconds_count", { method: "tools/list" })).toBe(2)
    // The unknown tool is no published tool: it is in no series of its own.
    expect(after).not.toContain("alpha__nope")
    // Every /mcp request is counted once by status, and once in the duration histogram by method.
    const total = (text: string, name: string, labels: Record<string, string>) =>
      samples(text)
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0)
    const requests =
      total(after, "gateway_http_requests_total", { route: "/mcp" }) -
      total(before, "gateway_http_requests_total", { route: "/mcp" })
    const timed =
      total(after, "gateway_mcp_request_duration_seconds_count", {}) -
      total(before, "gateway_mcp_request_duration_seconds_count", {})
    expect(requests).toBe(timed)
    expect(requests).toBeGreaterThanOrEqual(6)
  })

  it("keeps label values bounded: unknown paths and methods are `other`, nothing of the request is a label", async () => {
    const before = await scrape(admin)
    await fetch(`${gateway.baseUrl}/not-a-route-canary?token=secret-canary`)
    const token = await gateway.token()
    const answer = await rawPost(
      gateway.mcpUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "method-canary/x", params: {} }),
      { authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-06-18" }
    )
    await answer.text()
    const after = await scrape(admin)
    expect(
      sampleValue(after, "gateway_http_requests_total", { route: "other", status: "404" }) -
        sampleValue(before, "gateway_http_requests_total", { route: "other", status: "404" })
    ).toBe(1)
    expect(
      sampleValue(after, "gateway_mcp_request_duration_seconds_count", { method: "other" }) -
        sampleValue(before, "gateway_mcp_request_duration_seconds_count", { method: "other" })
    ).toBe(1)
    expect(after).not.toMatch(/canary|secret/)
  })

  it("reports each backend's state and catalog age, and the generation", async () => {
    const text = await scrape(admin)
    expect(sampleValue(text, "gateway_backend_ready", { backend: "alpha" })).toBe(1)
    expect(sampleValue(text, "gateway_backend_ready", { backend: "gone" })).toBe(0)
    expect(sampleValue(text, "gateway_backend_state", { backend: "gone", state: "unavailable" })).toBe(1)
    expect(sampleValue(text, "gateway_backend_state", { backend: "gone", state: "ready" })).toBe(0)
    expect(sampleValue(text, "gateway_backend_catalog_age_seconds", { backend: "alpha" })).toBeGreaterThanOrEqual(0)
    expect(text).not.toMatch(/gateway_backend_catalog_age_seconds\{backend="gone"\}/)
    expect(sampleValue(text, "gateway_generation_id")).toBe(1)
  })

  it("counts an applied reload and shows the new generation", async () => {
    const before = await scrape(admin)
    await gateway.reload({
      backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    })
    const after = await scrape(admin)
    expect(
      sampleValue(after, "gateway_reloads_total", { result: "applied" }) -
        sampleValue(before, "gateway_reloads_total", { result: "applied" })
    ).toBe(1)
    expect(sampleValue(after, "gateway_generation_id")).toBe(2)
    // The replaced generation's backend is gone from the gauges with it.
    expect(after).not.toMatch(/backend="gone"/)
  })
})
