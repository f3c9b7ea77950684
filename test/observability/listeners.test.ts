/**
 * Where `/metrics` is served by a real `gateway serve` process (docs/operations.md, "Metrics"): the
 * loopback admin listener and `observability.metrics_listen` (which serves nothing else); never the public
 * listener. A reload that changes a static observability key is refused and counted.
 */
import { afterEach, describe, expect, it } from "vitest"
import { freePort, type GatewayProcess, startGateway } from "../support/gateway-process.js"
import { sampleValue } from "../support/prometheus.js"

let gateway: GatewayProcess | undefined
afterEach(async () => {
  await gateway?.stop()
  gateway = undefined
})

const config = (port: number, metricsPort: number) => (dir: string) =>
  `
server:
  listen: 127.0.0.1:${port}
  public_url: http://127.0.0.1:${port}/mcp
auth:
  issuer: http://127.0.0.1:${port}/sso
storage:
  type: sqlite
  path: ${dir}/gateway.db
observability:
  metrics_listen: 127.0.0.1:${metricsPort}
`

describe("the listeners serving /metrics", () => {
  it("serves it on the admin listener and on metrics_listen, which answers 404 for anything else; never publicly", async () => {
    const port = await freePort()
    const metricsPort = await freePort()
    gateway = await startGateway({ port, config: config(port, metricsPort) })
    const own = `http://127.0.0.1:${metricsPort}`
    for (const origin of [gateway.adminUrl, own]) {
      const response = await fetch(`${origin}/metrics`)
      expect(response.status).toBe(200)
      const text = await response.text()
      expect(sampleValue(text, "gateway_generation_id")).toBe(1)
    }
    expect((await fetch(`${gateway.baseUrl}/metrics`)).status).toBe(404)
    const elsewhere = await fetch(`${own}/api/v1/status`)
    expect(elsewhere.status).toBe(404)
    expect(await elsewhere.json()).toMatchObject({ error: "not_found" })
    expect((await fetch(`${own}/metrics`, { method: "POST" })).status).toBe(404)
  })

  it("refuses a reload that changes observability.metrics_listen, and counts it", async () => {
    const port = await freePort()
    const metricsPort = await freePort()
    gateway = await startGateway({ port, config: config(port, metricsPort) })
    const from = gateway.stderr().length
    gateway.writeConfig(config(port, await freePort())(gateway.dir))
    gateway.child.kill("SIGHUP")
    await gateway.waitForLog("reload rejected: static fields changed", from)
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    expect(sampleValue(text, "gateway_reloads_total", { result: "static_changed" })).toBe(1)
    expect(sampleValue(text, "gateway_generation_id")).toBe(1)
  })
})
