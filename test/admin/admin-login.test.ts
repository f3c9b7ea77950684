/**
 * docs/management-api.md, "Getting a token": a loopback client of its own whose resource is the admin
 * listener. `gateway admin-login` against a spawned `gateway serve`:
 * it prints the address to open, the administrator signs in through the gateway's pages, and the token
 * it prints opens the Management API on the admin listener. The real executable, real signals.
 */
import { spawn } from "node:child_process"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { totpAt } from "../../src/identity/local/totp.js"
import {
  freePort,
  type GatewayProcess,
  newConfigKey,
  runGatewayCommand,
  startGateway
} from "../support/gateway-process.js"
import { postToolsList } from "../support/mcp-clients.js"
import { Browser, enrollmentSecret, formFields } from "../support/oauth-client.js"

const root = resolve(import.meta.dirname, "../..")
const password = "administrator's long passphrase"
const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

/** Runs `gateway admin-login` until it prints the authorization address; then resolves its outcome. */
const startAdminLogin = (configFile: string, key: string) => {
  const child = spawn(
    process.execPath,
    [
      "--import",
      join(root, "node_modules/tsx/dist/loader.mjs"),
      join(root, "src/main.ts"),
      "admin-login",
      "--config",
      configFile
    ],
    {
      cwd: root,
      env: { PATH: process.env["PATH"] ?? "", HOME: "/tmp", GATEWAY_CONFIG_KEY: key },
      stdio: ["ignore", "pipe", "pipe"]
    }
  )
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
    child.on("exit", () => fail(new Error(`admin-login exited early:\n${stderr}`)))
  })
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((done) =>
    child.on("exit", (code) => done({ code, stdout, stderr }))
  )
  cleanup.push(async () => {
    if (child.exitCode === null) child.kill("SIGKILL")
  })
  return { url, exited }
}

/** The person in the browser: password, TOTP enrolment, then the redirect to the CLI's loopback port. */
const signInThroughPages = async (authorizationUrl: string) => {
  const browser = new Browser(new URL(authorizationUrl).origin)
  const page = await browser.follow(await browser.get(authorizationUrl))
  const afterPassword = await browser.follow(
    await browser.post("/sso/login/local", {
      ...formFields(await page.text(), "/sso/login/local"),
      username: "admin",
      password
    })
  )
  const step = await afterPassword.text()
  const secret = enrollmentSecret(step)
  const done = await browser.follow(
    await browser.post("/sso/mfa/enroll", { ...formFields(step, "/sso/mfa/enroll"), code: totpAt(secret, Date.now()) })
  )
  const callback = done.headers.get("location")
  if (callback === null) throw new Error(`no redirect to the CLI: ${done.status} ${await done.text()}`)
  // The browser follows the redirect to the CLI's loopback listener.
  const landed = await fetch(callback)
  return { callback: new URL(callback), page: await landed.text() }
}

describe("gateway admin-login", () => {
  it("signs the administrator in through the browser and prints a token the Management API accepts", async () => {
    const port = await freePort()
    const adminPort = await freePort()
    const key = newConfigKey()
    const gateway: GatewayProcess = await startGateway({
      port,
      env: { GATEWAY_CONFIG_KEY: key },
      config: (dir) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth:
  issuer: "http://127.0.0.1:${port}/sso"
  sso:
    clients:
      - { id: gateway-admin, redirect_uris: ["http://127.0.0.1/callback"], resources: ["http://127.0.0.1:${adminPort}"] }
storage: { type: sqlite, path: "${dir}/gateway.db" }
admin: { listen: "127.0.0.1:${adminPort}" }
`
    })
    cleanup.push(() => gateway.stop())
    const created = await runGatewayCommand(["init-admin", "--config", gateway.configFile, "--password-stdin"], {
      env: { GATEWAY_CONFIG_KEY: key },
      stdin: `${password}\n`
    })
    expect(created.code).toBe(0)

    const login = startAdminLogin(gateway.configFile, key)
    const url = new URL(await login.url)
    expect(url.searchParams.get("client_id")).toBe("gateway-admin")
    expect(url.searchParams.get("resource")).toBe(`http://127.0.0.1:${adminPort}`)
    expect(url.searchParams.get("code_challenge_method")).toBe("S256")
    expect(url.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)
    // Anything on the machine can reach the loopback port: an answer with another state is turned
    // away and does not end the sign-in.
    const stray = new URL(url.searchParams.get("redirect_uri")!)
    stray.searchParams.set("state", "not-this-sign-in")
    stray.searchParams.set("error", "access_denied")
    expect((await fetch(stray)).status).toBe(400)
    const { callback, page } = await signInThroughPages(url.toString())
    expect(callback.searchParams.get("state")).toBe(url.searchParams.get("state"))
    expect(page).toContain("You are signed in")

    const { code, stdout, stderr } = await login.exited
    expect(code).toBe(0)
    const token = stdout.trim()
    expect(token.split(".")).toHaveLength(3)
    // Only the address and a short confirmation go to stderr: never the token.
    expect(stderr).not.toContain(token)
    const listed = await fetch(`http://127.0.0.1:${adminPort}/api/v1/identities`, {
      headers: { authorization: `Bearer ${token}` }
    })
    expect(listed.status).toBe(200)
    const body = (await listed.json()) as { users: Array<{ username: string }> }
    expect(body.users.map((user) => user.username)).toContain("admin")
    // The same token is no /mcp token: another audience.
    const mcp = await postToolsList(`http://127.0.0.1:${port}/mcp`, token)
    expect(mcp.status).toBe(401)
  }, 60_000)

  it("explains what to register when the client is missing", async () => {
    const result = await runGatewayCommand(
      ["admin-login", "--config", join(root, "test/fixtures/config/no-admin-client.yaml")],
      {
        env: { GATEWAY_CONFIG_KEY: newConfigKey() }
      }
    )
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('register a client "gateway-admin" in auth.sso.clients')
  })
})
