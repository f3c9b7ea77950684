/**
 * docs/operations.md, "When the database goes away", on SQLite: the outage SQLite can have while the
 * gateway runs is a lock another process holds past the 5 s busy timeout (its file stays open, so a
 * file made unreadable, moved or removed keeps being served). A real `gateway serve` on a SQLite file, a
 * writer of the test's own holding the file's write lock: a refresh answers `503 store_unavailable` with
 * `Retry-After`, the outage is logged once, and the refresh token works once the lock is released.
 */
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type GatewayProcess, newConfigKey, startGateway } from "../support/gateway-process.js"
import { runGateway } from "../support/oauth-cli.js"
import { Browser, exchange, obtainCode, refresh } from "../support/oauth-client.js"
import { ADMIN_PASSWORD } from "../support/oauth-gateway.js"

let gateway: GatewayProcess
let database: string
const env = { GATEWAY_CONFIG_KEY: newConfigKey() }

beforeAll(async () => {
  const port = await freePort()
  gateway = await startGateway({
    port,
    env,
    config: (dir) => {
      database = join(dir, "gateway.db")
      return [
        `server: { listen: 127.0.0.1:${port}, public_url: http://127.0.0.1:${port}/mcp }`,
        "auth:",
        `  issuer: http://127.0.0.1:${port}/sso`,
        "  sso:",
        "    clients:",
        `      - { id: cli, redirect_uris: ["http://127.0.0.1/callback"], resources: ["http://127.0.0.1:${port}/mcp"] }`,
        `storage: { type: sqlite, path: ${database} }`,
        ""
      ].join("\n")
    }
  })
  const init = await runGateway(["init-admin", "--password-stdin", "--config", gateway.configFile], {
    env,
    stdin: ADMIN_PASSWORD
  })
  expect(init.code).toBe(0)
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
})

describe("when the SQLite file stays locked (spawned gateway)", () => {
  it("a refresh answers 503 store_unavailable with Retry-After, is logged once, and the token works after", async () => {
    const browser = new Browser(gateway.baseUrl)
    const signedIn = await exchange(
      gateway.baseUrl,
      await obtainCode(browser, { scope: "offline_access", totp: {}, nowMs: Date.now() })
    )
    expect(signedIn.response.status).toBe(200)
    const refreshToken = String(signedIn.body["refresh_token"])

    const logFrom = gateway.stderr().length
    // Another process holds the write lock (WAL: readers go on, writers wait).
    const scope = Effect.runSync(Scope.make())
    const other = await Effect.runPromise(
      Layer.buildWithScope(SqliteClient.layer({ filename: database }), scope).pipe(
        Effect.map((context) => Context.get(context, SqlClient.SqlClient))
      )
    )
    await Effect.runPromise(other`BEGIN IMMEDIATE`)
    const started = performance.now()
    const refusing = refresh(gateway.baseUrl, refreshToken)
    // The driver waits out the busy timeout synchronously: the process answers nothing meanwhile
    // (a figure for docs/operations.md, not a goal).
    await new Promise((done) => setTimeout(done, 500))
    const probeStarted = performance.now()
    await fetch(`${gateway.baseUrl}/healthz`)
    const healthzMs = performance.now() - probeStarted
    const refused = await refusing
    const waitedMs = performance.now() - started
    await Effect.runPromise(other`ROLLBACK`)
    await Effect.runPromise(Scope.close(scope, Exit.void))

    expect(refused.response.status).toBe(503)
    expect(refused.response.headers.get("retry-after")).toBe("2")
    expect(refused.body["error"]).toBe("store_unavailable")
    // The 5 s busy timeout was waited out first.
    expect(waitedMs).toBeGreaterThan(4_500)

    const rotated = await refresh(gateway.baseUrl, refreshToken)
    expect(rotated.response.status).toBe(200)
    // A request's failure holds the outage 5 s past it (RECOVERY_QUIET, src/store/health.ts).
    await gateway.waitForLog('"store.recovered"', logFrom, 10_000)
    const lines = gateway
      .stderr()
      .slice(logFrom)
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry["level"] === "error" || String(entry["event"]).startsWith("store."))
    expect(lines).toMatchObject([
      { event: "store.unavailable", reason: "sqlite SQLITE_BUSY" },
      { event: "store.recovered", failures: 1 }
    ])
    console.log(JSON.stringify({ sqlite_locked_refresh_ms: Math.round(waitedMs), healthz_ms: Math.round(healthzMs) }))
  }, 30_000)
})
