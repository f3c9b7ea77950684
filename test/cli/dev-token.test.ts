/**
 * `gateway dev-token` (issue: hardening, item 7; docs/mcp.md, "Trying it"): it runs only against a
 * development setup — the same rule as `serve --dev` — so it never signs with a production key nor
 * writes to a production store; and a gateway started without `--dev` refuses its tokens saying why.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import {
  freePort,
  type GatewayProcess,
  newConfigKey,
  runGatewayCommand,
  startGateway
} from "../support/gateway-process.js"
import { postToolsList } from "../support/mcp-clients.js"

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const each of cleanup.reverse()) await each()
})

const config = (port: number, database: string) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth: { issuer: "http://127.0.0.1:${port}/sso" }
storage: { type: sqlite, path: "${database}" }
`

const listTools = (gateway: GatewayProcess, token: string) => postToolsList(`${gateway.baseUrl}/mcp`, token)

const refusal = "dev-token runs only against a development setup"
const onlyDev = "development tokens are accepted only by a gateway started with --dev"

describe("gateway dev-token", () => {
  /** A directory with a configuration file and nothing else: no store, no development key. */
  const bare = () => {
    const dir = mkdtempSync(join(tmpdir(), "gateway-dev-token-"))
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }))
    const database = join(dir, "gateway.db")
    const file = join(dir, "gateway.yaml")
    writeFileSync(file, config(8080, database))
    return { dir, database, file }
  }

  it("refuses when GATEWAY_CONFIG_KEY is set: never signs with a production key, writes nothing", async () => {
    const { dir, database, file } = bare()
    const result = await runGatewayCommand(["dev-token", "--config", file], {
      env: { GATEWAY_CONFIG_KEY: newConfigKey() },
      cwd: dir
    })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(`${refusal} (GATEWAY_CONFIG_KEY is set)`)
    expect(result.stderr).toContain(onlyDev)
    expect(existsSync(database)).toBe(false)
  })

  it("refuses where no `serve --dev` made a development key, and creates none", async () => {
    const { dir, database, file } = bare()
    const result = await runGatewayCommand(["dev-token", "--config", file], { cwd: dir })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`${refusal} (there is no development key data/dev-config.key here)`)
    expect(existsSync(join(dir, "data/dev-config.key"))).toBe(false)
    expect(existsSync(database)).toBe(false)
  })

  it("after `serve --dev` its token works there (--subject: an existing user's id only); a gateway without --dev refuses it and says why", async () => {
    const port = await freePort()
    const dev = await startGateway({
      port,
      args: ["--dev"],
      env: { GATEWAY_CONFIG_KEY: undefined },
      config: (dir) => config(port, join(dir, "gateway.db"))
    })
    cleanup.push(() => dev.stop())
    const minted = await runGatewayCommand(["dev-token", "--config", dev.configFile], { cwd: dev.dir })
    expect(minted.stderr).not.toContain(refusal)
    expect(minted.code).toBe(0)
    const token = minted.stdout.trim()
    expect((await listTools(dev, token)).status).toBe(200)

    // --subject takes a user's id: one nobody has is refused, with no token printed.
    const nobody = await runGatewayCommand(["dev-token", "--config", dev.configFile, "--subject", "nobody"], {
      cwd: dev.dir
    })
    expect(nobody.code).toBe(1)
    expect(nobody.stdout).toBe("")
    expect(nobody.stderr).toContain('--subject "nobody": no user has that id in this store.')
    const developerId = (JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { sub: string }).sub
    const named = await runGatewayCommand(["dev-token", "--config", dev.configFile, "--subject", developerId], {
      cwd: dev.dir
    })
    expect(named.code).toBe(0)
    expect((await listTools(dev, named.stdout.trim())).status).toBe(200)

    // The same store and key, served without --dev (as production would be) once the development
    // gateway has stopped: one gateway serves a database (its instance lock, docs/storage.md).
    dev.child.kill("SIGKILL")
    await dev.exited
    const otherPort = await freePort()
    const production = await startGateway({
      port: otherPort,
      env: { GATEWAY_CONFIG_KEY: readFileSync(join(dev.dir, "data/dev-config.key"), "utf8").trim() },
      // Listening elsewhere, but the same issuer and resource, so the token is one it would verify.
      config: () => config(otherPort, join(dev.dir, "gateway.db")).replaceAll(`:${otherPort}/`, `:${port}/`)
    })
    cleanup.push(() => production.stop())
    const refused = await listTools(production, token)
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({
      error: "invalid_token",
      error_description: "Development tokens (gateway dev-token) are accepted only by a gateway started with --dev."
    })
  }, 60_000)
})
