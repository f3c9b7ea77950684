/**
 * docs/authorization-server.md, "Lifetimes and limits" — pending authorization transactions and codes live in memory
 * only (lost on restart) while stored sessions and signing keys survive; a reload (SIGHUP) keeps them.
 * A real `gateway serve` process, restarted with the same key and database.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { freePort, type GatewayProcess, newConfigKey, startGateway } from "../support/gateway-process.js"
import { runGateway } from "../support/oauth-cli.js"
import {
  authorizePath,
  Browser,
  exchange,
  mcpInitialize,
  obtainCode,
  pkcePair,
  refresh
} from "../support/oauth-client.js"
import { ADMIN_PASSWORD } from "../support/oauth-gateway.js"

const running: Array<GatewayProcess> = []
const dirs: Array<string> = []
afterEach(async () => {
  for (const gateway of running.splice(0)) await gateway.stop()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const yaml = (port: number, database: string) => () =>
  [
    `server: { listen: 127.0.0.1:${port}, public_url: http://127.0.0.1:${port}/mcp }`,
    "auth:",
    `  issuer: http://127.0.0.1:${port}/sso`,
    "  sso:",
    "    clients:",
    `      - { id: cli, redirect_uris: ["http://127.0.0.1/callback"], resources: ["http://127.0.0.1:${port}/mcp"] }`,
    `storage: { type: sqlite, path: ${database} }`,
    `admin: { listen: "127.0.0.1:${port + 1 > 65535 ? port - 1 : port + 1}" }`,
    ""
  ].join("\n")

const jwksKids = async (origin: string) =>
  ((await (await fetch(`${origin}/sso/jwks.json`)).json()) as { keys: Array<{ kid: string }> }).keys.map(
    (key) => key.kid
  )

describe("restart and reload (spawned gateway)", () => {
  it("a reload keeps pending codes; a restart loses them but keeps sessions and signing keys", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gateway-restart-"))
    dirs.push(dir)
    const port = await freePort()
    const config = yaml(port, join(dir, "gateway.db"))
    const env = { GATEWAY_CONFIG_KEY: newConfigKey() }
    const first = await startGateway({ port, config, env })
    running.push(first)
    const init = await runGateway(["init-admin", "--password-stdin", "--config", first.configFile], {
      env,
      stdin: ADMIN_PASSWORD
    })
    expect(init.code).toBe(0)

    const browser = new Browser(first.baseUrl)
    const totp: { secret?: Uint8Array } = {}
    const tokens = await exchange(
      first.baseUrl,
      await obtainCode(browser, { scope: "offline_access", totp, nowMs: Date.now() })
    )
    expect(tokens.response.status).toBe(200)
    const kids = await jwksKids(first.baseUrl)

    // SIGHUP: a new generation, same process: codes and transactions carry over.
    const beforeReload = await obtainCode(browser, { scope: "offline_access", totp, nowMs: Date.now() })
    const from = first.stderr().length
    first.child.kill("SIGHUP")
    await first.waitForLog('"msg":"reloaded"', from)
    expect((await exchange(first.baseUrl, beforeReload)).response.status).toBe(200)

    const pending = await obtainCode(browser, { scope: "offline_access", totp, nowMs: Date.now() })
    const start = await browser.get(
      authorizePath({
        client_id: "cli",
        redirect_uri: "http://127.0.0.1:45000/callback",
        response_type: "code",
        code_challenge: pkcePair().challenge,
        code_challenge_method: "S256",
        prompt: "login"
      })
    )
    const transactionPage = start.headers.get("location") ?? ""
    expect((await browser.get(transactionPage)).status).toBe(200)

    first.child.kill("SIGTERM")
    expect(await first.exited).toBe(0)
    const second = await startGateway({ port, config, env })
    running.push(second)

    expect((await exchange(second.baseUrl, pending)).body["error"]).toBe("invalid_grant")
    expect((await browser.get(transactionPage)).status).toBe(400)

    expect(await jwksKids(second.baseUrl)).toEqual(kids)
    expect((await mcpInitialize(second.baseUrl, String(tokens.body["access_token"]))).status).toBe(200)
    const rotated = await refresh(second.baseUrl, String(tokens.body["refresh_token"]))
    expect(rotated.response.status).toBe(200)
    expect((await mcpInitialize(second.baseUrl, String(rotated.body["access_token"]))).status).toBe(200)
    // The browser's sign-in is stored too: no sign-in page after the restart.
    const again = await obtainCode(browser, { totp, nowMs: Date.now() })
    expect(again.callback.get("code")).toEqual(expect.any(String))
    // Two process starts, init-admin and four password sign-ins (scrypt): about 5 s on an idle 2-core
    // machine, several times that beside the other half of a full run.
  }, 60_000)
})
