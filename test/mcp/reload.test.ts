/**
 * Reloads and the data plane (docs/operations.md, "Generations and reload"; docs/mcp.md, "Backends"):
 * backends added and removed under load on a real process with SIGHUP, required backends gating a
 * candidate, and catalog inheritance for an optional backend that is down.
 */
import { Context, Effect, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { Signer } from "../../src/crypto/signer.js"
import { baseLayer } from "../../src/runtime/base.js"
import { configOf } from "../fixtures/config/base.js"
import { freePort, type GatewayProcess, newConfigKey, startGateway } from "../support/gateway-process.js"
import { grantAccess } from "../support/grants.js"
import { quietly } from "../support/logs.js"
import { alphaTools, commonTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const backend = (id: string, url: string, extra: Record<string, unknown> = {}) => ({
  id,
  url,
  allow_insecure_http: true,
  tool_rules: [{ tools: ["*"] }],
  ...extra
})

describe("catalog inheritance", () => {
  it("an optional backend down at reload keeps its catalog only while its source identity is unchanged", async () => {
    const alpha: TestBackend = await startBackend("alpha", alphaTools)
    cleanup.push(() => alpha.stop())
    const gateway: TestGateway = await startTestGateway({ patch: { backends: [backend("alpha", alpha.url)] } })
    cleanup.push(() => gateway.close())
    const token = await gateway.token()
    const names = async () => {
      const client = await connectClient(gateway.mcpUrl, token)
      const tools = (await client.listTools()).tools.map((tool) => tool.name)
      await client.close()
      return tools
    }
    expect(await names()).toContain("alpha__echo")

    await alpha.stop()
    // Only timeouts changed: same identity, so the stale catalog is inherited but the backend is not ready.
    await gateway.reload({ backends: [backend("alpha", alpha.url, { timeouts: { call: "5s" } })] })
    expect(await names()).toContain("alpha__echo")
    const ready = await (await fetch(`${gateway.baseUrl}/readyz`)).json()
    expect(ready).toMatchObject({ backends_ready: 0, backends_total: 1 })
    const client = await connectClient(gateway.mcpUrl, token)
    const error = await client
      .callTool({ name: "alpha__echo", arguments: { message: "x" } })
      .catch((e: Error & { code: number }) => e)
    expect((error as Error & { code: number }).code).toBe(-32603)
    await client.close()

    // A changed header changes the identity: nothing is inherited.
    await gateway.reload({ backends: [backend("alpha", alpha.url, { headers: { "X-Tenant": "b" } })] })
    expect(await names()).toEqual([])

    // The backend comes back: the worker reconnects with capped backoff and the tools return.
    await alpha.start()
    await expect.poll(names, { timeout: 10_000, interval: 200 }).toContain("alpha__echo")
  })

  it("a candidate whose required backend cannot connect is rejected and the old generation keeps serving", async () => {
    const alpha = await startBackend("alpha", alphaTools)
    cleanup.push(() => alpha.stop())
    const gateway = await startTestGateway({ patch: { backends: [backend("alpha", alpha.url)] } })
    cleanup.push(() => gateway.close())
    await expect(
      gateway.reload({
        backends: [backend("alpha", alpha.url), backend("gone", "http://127.0.0.1:9/mcp", { required: true })]
      })
    ).rejects.toThrow()
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    expect((await client.callTool({ name: "alpha__echo", arguments: { message: "still" } })).content).toEqual([
      { type: "text", text: "still" }
    ])
    await client.close()
  })
})

describe("readiness follows the backends", () => {
  it("a required backend that drops after start turns /readyz to 503 until it is back", async () => {
    const alpha = await startBackend("alpha", alphaTools)
    cleanup.push(() => alpha.stop())
    const gateway = await startTestGateway({ patch: { backends: [backend("alpha", alpha.url, { required: true })] } })
    cleanup.push(() => gateway.close())
    const readiness = async () => (await fetch(`${gateway.baseUrl}/readyz`)).status
    expect(await readiness()).toBe(200)
    await alpha.stop()
    const client = await connectClient(gateway.mcpUrl, await gateway.token())
    const failed = await client
      .callTool({ name: "alpha__echo", arguments: { message: "x" } })
      .catch((e: Error & { code: number }) => e)
    expect((failed as Error & { code: number }).code).toBe(-32603)
    await client.close()
    await expect.poll(readiness, { timeout: 5_000 }).toBe(503)
    await alpha.start()
    await expect.poll(readiness, { timeout: 10_000, interval: 200 }).toBe(200)
  })
})

describe("SIGHUP adding and removing a backend under load", () => {
  it("serves every request while backends come and go", async () => {
    const alpha = await startBackend("alpha", alphaTools)
    const beta = await startBackend("beta", (server) => commonTools(server, "beta"))
    cleanup.push(
      () => alpha.stop(),
      () => beta.stop()
    )
    const port = await freePort()
    const key = newConfigKey()
    const yaml = (withBeta: boolean) => (dir: string) =>
      `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth: { issuer: "http://127.0.0.1:${port}/sso" }
storage: { type: sqlite, path: "${dir}/gateway.db" }
backends:
  - { id: alpha, url: "${alpha.url}", allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
${withBeta ? `  - { id: beta, url: "${beta.url}", allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }` : ""}
`
    const gateway: GatewayProcess = await startGateway({
      port,
      config: yaml(false),
      env: { GATEWAY_CONFIG_KEY: key },
      args: ["--dev"]
    })
    cleanup.push(() => gateway.stop())
    const token = await devToken(gateway.dir, key, `http://127.0.0.1:${port}`)
    const url = `http://127.0.0.1:${port}/mcp`
    const call = async (name: string) => {
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name, arguments: { q: "x" } }
      })
      const response = await rawPost(url, body, { authorization: `Bearer ${token}` })
      return { status: response.status, message: await jsonRpcOf(response) }
    }

    let running = true
    const failures: Array<unknown> = []
    let calls = 0
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (running) {
          const { status, message } = await call("alpha__search")
          calls++
          if (status !== 200 || message["error"] !== undefined) failures.push({ status, message })
        }
      })
    )
    const reload = async (withBeta: boolean) => {
      const from = gateway.stderr().length
      gateway.writeConfig(yaml(withBeta)(gateway.dir))
      gateway.child.kill("SIGHUP")
      await gateway.waitForLog('"msg":"reloaded"', from)
    }
    await reload(true)
    expect((await call("beta__search")).message["result"]).toBeDefined()
    await reload(false)
    expect((await call("beta__search")).message["error"]).toMatchObject({ code: -32602 })
    await reload(true)
    running = false
    await load
    expect(failures).toEqual([])
    expect(calls).toBeGreaterThan(20)
  }, 60_000)
})

/**
 * Mints a token the spawned `--dev` gateway accepts, with its own signing key (same database and config
 * key), for a user the test grants every tool of both backends (written to the same database).
 */
const devToken = (dir: string, key: string, origin: string) =>
  Effect.runPromise(
    quietly(
      Effect.scoped(
        Effect.gen(function* () {
          const configKey = yield* parseConfigKey(key)
          const context = yield* Layer.build(
            baseLayer(configOf({ storage: { type: "sqlite", path: `${dir}/gateway.db` } }), configKey)
          )
          const { userId } = yield* Effect.provide(
            grantAccess([
              { endpoint_id: "alpha", tools: ["search"] },
              { endpoint_id: "beta", tools: ["search"] }
            ]),
            context
          )
          return yield* Context.get(context, Signer).sign(
            { scope: "", sid: "dev:reload-test" },
            { issuer: `${origin}/sso`, audience: `${origin}/mcp`, subject: userId, expiresInSeconds: 600 }
          )
        })
      )
    )
  )
