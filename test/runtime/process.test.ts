/**
 * Probes (/healthz, /readyz), the 404 body, reload and shutdown (docs/operations.md, docs/errors.md),
 * tested on a real spawned `gateway serve` process with real signals.
 */
import { afterEach, describe, expect, it } from "vitest"
import { freePort, type GatewayProcess, startGateway } from "../support/gateway-process.js"

interface Knobs {
  readonly requestTimeout?: string
  readonly drainTimeout?: string
  readonly publicPath?: string
  readonly extra?: string
}

const yaml =
  (port: number, knobs: Knobs = {}) =>
  (dir: string) =>
    `
server:
  listen: 127.0.0.1:${port}
  public_url: http://127.0.0.1:${port}${knobs.publicPath ?? "/mcp"}
auth:
  issuer: http://127.0.0.1:${port}/sso
storage:
  type: sqlite
  path: ${dir}/gateway.db
request_timeout: ${knobs.requestTimeout ?? "30s"}
drain_timeout: ${knobs.drainTimeout ?? "5s"}
${knobs.extra ?? ""}
`

let gateway: GatewayProcess | undefined
afterEach(async () => {
  await gateway?.stop()
  gateway = undefined
})

const start = async (knobs: Knobs = {}) => {
  const port = await freePort()
  gateway = await startGateway({ port, config: yaml(port, knobs) })
  return { gateway, port, rewrite: (next: Knobs) => gateway!.writeConfig(yaml(port, next)(gateway!.dir)) }
}

const slow = (base: string, ms: number) => fetch(`${base}/__test/slow?ms=${ms}`)

/** Starts a slow request and waits until the gateway logs it in flight; `response` settles later. */
const slowInFlight = async (process: GatewayProcess, ms: number) => {
  const from = process.stderr().length
  const response = slow(process.baseUrl, ms)
  // Settled by the test; kept from rejecting unobserved while the log is awaited.
  response.catch(() => {})
  await process.waitForLog("test slow request started", from)
  return { response }
}

const reload = async (process: GatewayProcess, expectLog: string) => {
  const from = process.stderr().length
  process.child.kill("SIGHUP")
  await process.waitForLog(expectLog, from)
}

describe("gateway serve (spawned process)", () => {
  it("answers /healthz, /readyz and the JSON 404 body", async () => {
    const { gateway } = await start()
    const health = await fetch(`${gateway.baseUrl}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: "ok" })
    expect(health.headers.get("cache-control")).toBe("no-store")
    expect((await fetch(`${gateway.baseUrl}/healthz`, { method: "HEAD" })).status).toBe(200)
    const wrongMethod = await fetch(`${gateway.baseUrl}/healthz`, { method: "POST" })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD")

    const ready = await fetch(`${gateway.baseUrl}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({
      backends_ready: 0,
      backends_total: 0,
      required_ready: 0,
      required_total: 0,
      auth_verifier_ready: true,
      store_ready: true
    })

    const missing = await fetch(`${gateway.baseUrl}/no/such/path`)
    expect(missing.status).toBe(404)
    expect(missing.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const body = await missing.json()
    expect(body).toEqual({
      error: "not_found",
      error_description: expect.any(String),
      request_id: missing.headers.get("x-request-id")
    })
  })

  // A required backend must connect for the gateway to start (issue 3; docs/mcp.md). A required backend
  // that drops later turns /readyz to 503: test/mcp/reload.test.ts.
  it("refuses to start while a required backend is not reachable, naming it", async () => {
    const port = await freePort()
    const extra = `backends:\n  - id: tools\n    url: http://127.0.0.1:9/mcp\n    allow_insecure_http: true\n    required: true\n`
    await expect(startGateway({ port, config: yaml(port, { extra }) })).rejects.toThrow(/exited with 1[\s\S]*tools/)
  })

  it("publishes the signing keys as a JWKS without private parts", async () => {
    const { gateway } = await start()
    const response = await fetch(`${gateway.baseUrl}/sso/jwks.json`)
    expect(response.status).toBe(200)
    const jwks = (await response.json()) as { keys: Array<Record<string, unknown>> }
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1)
    for (const key of jwks.keys) {
      expect(key["kid"]).toEqual(expect.any(String))
      expect(key).not.toHaveProperty("d")
    }
  })

  it("enforces request_timeout with a 504 error body", async () => {
    const { gateway } = await start({ requestTimeout: "300ms" })
    const response = await slow(gateway.baseUrl, 2_000)
    expect(response.status).toBe(504)
    expect(await response.json()).toMatchObject({ error: "request_timeout" })
  })

  it("a good reload takes effect: a changed request_timeout", async () => {
    const { gateway, rewrite } = await start({ requestTimeout: "300ms" })
    expect((await slow(gateway.baseUrl, 800)).status).toBe(504)
    rewrite({ requestTimeout: "10s" })
    await reload(gateway, '"msg":"reloaded"')
    expect((await slow(gateway.baseUrl, 800)).status).toBe(200)
  })

  it("a slow in-flight request completes during a reload", async () => {
    const { gateway, rewrite } = await start({ drainTimeout: "10s" })
    const { response: inFlight } = await slowInFlight(gateway, 1_500)
    rewrite({ drainTimeout: "10s", requestTimeout: "20s" })
    await reload(gateway, '"msg":"reloaded"')
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ slept: 1_500 })
    await gateway.waitForLog('"msg":"generation closed"')
  })

  it("a request longer than drain_timeout is cancelled when its generation retires", async () => {
    const { gateway, rewrite } = await start({ drainTimeout: "300ms" })
    const started = Date.now()
    const { response: inFlight } = await slowInFlight(gateway, 10_000)
    rewrite({ drainTimeout: "300ms", requestTimeout: "20s" })
    await reload(gateway, '"msg":"reloaded"')
    const response = await inFlight
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ error: "unavailable" })
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it("a reload that changes a static field is rejected and the old generation keeps serving", async () => {
    const { gateway, rewrite } = await start({ requestTimeout: "300ms" })
    rewrite({ requestTimeout: "10s", publicPath: "/other" })
    await reload(gateway, "reload rejected: static fields changed")
    expect(gateway.stderr()).toContain("server.public_url")
    // The old request_timeout still applies: the candidate was never built.
    expect((await slow(gateway.baseUrl, 800)).status).toBe(504)
  })

  it("a reload with an invalid file is rejected and the old generation keeps serving", async () => {
    const { gateway } = await start({ requestTimeout: "300ms" })
    gateway.writeConfig("server: [this is not: valid")
    await reload(gateway, "reload rejected: invalid configuration")
    // One line with a stable message and event; the problems in a field of their own.
    const rejected = gateway
      .stderr()
      .split("\n")
      .filter((line) => line.includes('"config.reload_rejected"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(rejected).toMatchObject([
      {
        msg: "reload rejected: invalid configuration",
        event: "config.reload_rejected",
        reason: "invalid_config",
        problems: expect.stringContaining("gateway.yaml")
      }
    ])
    expect((await fetch(`${gateway.baseUrl}/healthz`)).status).toBe(200)
    expect((await slow(gateway.baseUrl, 800)).status).toBe(504)
  })

  it("SIGTERM lets an in-flight request finish, refuses new connections, and exits 0", async () => {
    const { gateway } = await start({ drainTimeout: "10s" })
    const { response: inFlight } = await slowInFlight(gateway, 1_000)
    gateway.child.kill("SIGTERM")
    await gateway.waitForLog('"msg":"shutting down"')
    await expect(fetch(`${gateway.baseUrl}/healthz`)).rejects.toThrow()
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await gateway.exited).toBe(0)
  })

  it("SIGINT cancels a request longer than drain_timeout and still exits 0", async () => {
    const { gateway } = await start({ drainTimeout: "300ms" })
    const started = Date.now()
    const inFlight = (await slowInFlight(gateway, 10_000)).response.then(
      (response) => response.status,
      () => "closed"
    )
    gateway.child.kill("SIGINT")
    expect(await gateway.exited).toBe(0)
    expect([503, "closed"]).toContain(await inFlight)
    expect(Date.now() - started).toBeLessThan(5_000)
  })
})
