/**
 * `gateway admin directory …` (docs/management-api.md, "The `gateway admin` commands"; docs/directory.md,
 * "Resetting a provider's version"): the built executable against a spawned gateway whose directory a
 * push of 2^53 - 1 locked. The command signs in as `gateway admin-login` does (or takes
 * GATEWAY_ADMIN_TOKEN), prints JSON without colour codes, and exits with a code a script can test.
 */
import { spawn } from "node:child_process"
import { copyFileSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import {
  freePort,
  gatewayExecutable,
  newConfigKey,
  type RunResult,
  runGatewayCommand,
  startGateway
} from "../support/gateway-process.js"
import { Browser, exchange, obtainCode, signIn } from "../support/oauth-client.js"
import { ADMIN_PASSWORD as password } from "../support/oauth-gateway.js"

const DIRECTORY_TOKEN = "directory-secret-0123456789-abcdefghijklmnop"
const MAX = Number.MAX_SAFE_INTEGER
const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

/** Runs `gateway <args>` until it prints the sign-in address; then resolves its outcome. */
const startSigningIn = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, [gatewayExecutable(), ...args], {
    env: { PATH: process.env["PATH"] ?? "", HOME: "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => {
    stdout += chunk
  })
  const url = new Promise<string>((done, fail) => {
    child.stderr.on("data", (chunk) => {
      stderr += chunk
      const match = /(http:\/\/\S+\/sso\/authorize\?\S+)/.exec(stderr)
      if (match !== null) done(match[1]!)
    })
    child.on("exit", () => fail(new Error(`gateway ${args.join(" ")} exited early:\n${stderr}`)))
  })
  const exited = new Promise<RunResult>((done) => child.on("exit", (code) => done({ code, stdout, stderr })))
  cleanup.push(async () => {
    if (child.exitCode === null) child.kill("SIGKILL")
  })
  return { url, exited }
}

const pushSnapshot = (baseUrl: string, version: number) =>
  fetch(`${baseUrl}/sso/directory`, {
    method: "PUT",
    headers: { authorization: `Bearer ${DIRECTORY_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      version,
      groups: [{ kind: "group", id: "eng", name: "Engineering" }],
      users: [{ subject: "alice", name: "Alice", active: true, groups: ["eng"], departments: [] }]
    })
  })

describe("gateway admin directory", () => {
  it("lists the versions and resets one a push set to 2^53 - 1, with JSON out and exit codes scripts can test", async () => {
    const port = await freePort()
    const adminPort = await freePort()
    const adminUrl = `http://127.0.0.1:${adminPort}`
    const env = { GATEWAY_CONFIG_KEY: newConfigKey(), UPSTREAM_SECRET: "upstream-secret", DIRECTORY_TOKEN }
    const gateway = await startGateway({
      port,
      env,
      config: (dir) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth:
  issuer: "http://127.0.0.1:${port}/sso"
  sso:
    upstream: { protocol: oidc, issuer: "https://login.example.com", client_id: gateway, client_secret_env: UPSTREAM_SECRET }
    directory_token_env: DIRECTORY_TOKEN
    clients:
      - { id: gateway-admin, redirect_uris: ["http://127.0.0.1/callback"], resources: ["${adminUrl}"] }
storage: { type: sqlite, path: "${dir}/gateway.db" }
admin: { listen: "127.0.0.1:${adminPort}" }
`
    })
    cleanup.push(() => gateway.stop())
    const config = ["--config", gateway.configFile]
    expect(
      (await runGatewayCommand(["init-admin", ...config, "--password-stdin"], { env, stdin: `${password}\n` })).code
    ).toBe(0)
    expect((await pushSnapshot(gateway.baseUrl, MAX)).status).toBe(200)
    expect((await pushSnapshot(gateway.baseUrl, 1_764_000_000)).status).toBe(409)

    // Without a token the command signs in as `gateway admin-login` does: the address on stderr.
    const totp: { secret?: Uint8Array } = {}
    const listing = startSigningIn(["admin", "directory", "list", ...config], env)
    const browser = new Browser(gateway.baseUrl)
    const page = await browser.follow(await browser.get(await listing.url))
    const done = await signIn(browser, page, { username: "admin", password, totp, nowMs: Date.now() })
    await fetch(done.headers.get("location")!)
    const listed = await listing.exited
    expect([listed.code, listed.stderr]).toEqual([0, expect.stringContaining("Open this address in your browser")])
    const connections = JSON.parse(listed.stdout).connections as Array<Record<string, unknown>>
    expect(connections).toMatchObject([{ connection: "oidc", version: MAX, revision: String(MAX) }])
    expect(listed.stdout).not.toContain("\u001b")

    // A script's token (what `gateway admin-login` prints), for the runs below.
    const obtained = await obtainCode(new Browser(gateway.baseUrl), {
      clientId: "gateway-admin",
      redirectUri: "http://127.0.0.1:50001/callback",
      scope: "gateway:admin",
      resource: adminUrl,
      totp,
      // The next TOTP step: the one just used is never accepted again.
      nowMs: Date.now() + 30_000
    })
    const token = String((await exchange(gateway.baseUrl, obtained)).body["access_token"])
    const admin = (args: ReadonlyArray<string>, options: { token?: string; stdin?: string } = {}) =>
      runGatewayCommand(["admin", "directory", ...args, ...config], {
        env: { ...env, GATEWAY_ADMIN_TOKEN: options.token ?? token },
        ...(options.stdin === undefined ? {} : { stdin: options.stdin })
      })

    // Refused: each with its exit code, the API's error body as JSON on stdout, nothing changed.
    const refusals: ReadonlyArray<readonly [ReadonlyArray<string>, number, string | undefined, string?]> = [
      [["reset-version", "oidc", "--if-match", "1764000000"], 5, "precondition_failed"],
      [["reset-version", "oidc", "--if-match", String(MAX), "--to", String(MAX)], 6, "invalid_request"],
      [["reset-version", "ldap", "--if-match", String(MAX)], 4, "not_found"],
      [["reset-version", "oidc", "--if-match", String(MAX), "--to", "1", "--json", '{"version":2}'], 2, undefined],
      [["list"], 3, "invalid_token", "not-a-token"]
    ]
    const results = await Promise.all(
      refusals.map(([args, , , badToken]) => admin(args, badToken === undefined ? {} : { token: badToken }))
    )
    for (const [index, [args, code, error]] of refusals.entries()) {
      const result = results[index]!
      expect([args.join(" "), result.code]).toEqual([args.join(" "), code])
      if (error === undefined) expect(result.stdout).toBe("")
      else expect(JSON.parse(result.stdout)).toMatchObject({ error })
      expect(result.stderr).not.toContain(token)
    }
    expect(JSON.parse((await admin(["list"])).stdout)).toEqual(JSON.parse(listed.stdout))
    // Help, as @effect/cli colours it for a terminal, is plain text into a pipe.
    const help = await runGatewayCommand(["admin", "directory", "reset-version", "--help"])
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("--if-match")])
    expect(help.stdout).not.toContain("\u001b")

    // The body as JSON on standard input, then --to; each printed as the connection's record.
    const first = await admin(["reset-version", "oidc", "--if-match", String(MAX), "--json", "-"], {
      stdin: '{"version": 1000}'
    })
    expect([first.code, JSON.parse(first.stdout)]).toEqual([0, expect.objectContaining({ version: 1000 })])
    const second = await admin(["reset-version", "oidc", "--if-match", "1000", "--to", "0"])
    expect([second.code, JSON.parse(second.stdout)]).toEqual([
      0,
      expect.objectContaining({ connection: "oidc", version: 0, revision: "0" })
    ])
    expect(second.stdout).not.toContain("\u001b")
    expect(gateway.stderr()).toContain('"directory.version_reset"')
    expect((await pushSnapshot(gateway.baseUrl, 1_764_000_000)).status).toBe(200)

    // No gateway: exit 1.
    const kept = join(mkdtempSync(join(tmpdir(), "gateway-admin-")), "gateway.yaml")
    copyFileSync(gateway.configFile, kept)
    config[1] = kept
    await gateway.stop()
    const unreachable = await admin(["list"])
    expect([unreachable.code, unreachable.stderr]).toEqual([1, expect.stringContaining("did not answer")])
  }, 90_000)
})
