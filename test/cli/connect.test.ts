/**
 * `gateway connect` end to end (docs/clients.md): MCP SDK clients spawn the real executable as their
 * stdio server; the person signs in with Chromium through the gateway's pages; tools/list and
 * tools/call reach a real backend through a spawned `gateway serve`; a revoked session is answered with a clear message and a new sign-in, after which calls work again
 * (the sign-in address, with its state and loopback port, goes to standard error only, never into the answer);
 * and the next run reuses the stored sign-in without a browser (the 1.x SDK client this time).
 */
import { readFileSync, statSync } from "node:fs"
import type { Server } from "node:http"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import type { Browser as Chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SESSION_ENDED_CODE } from "../../src/connect/relay.js"
import { startDemoBackend } from "../../src/demo/serve.js"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { launchChromium } from "../support/browser.js"
import {
  freePort,
  type GatewayProcess,
  gatewayExecutable,
  runGatewayCommand,
  startGateway
} from "../support/gateway-process.js"

const password = "administrator's long passphrase"
const cleanup: Array<() => Promise<unknown>> = []
let gateway: GatewayProcess
let chromium: Chromium
let totpSecret: Uint8Array | undefined

beforeAll(async () => {
  const demoPort = await freePort()
  const demo: Server = await startDemoBackend(demoPort)
  cleanup.push(() => new Promise((done) => demo.close(done)))
  const port = await freePort()
  gateway = await startGateway({
    port,
    args: ["--dev"],
    env: { GATEWAY_CONFIG_KEY: undefined },
    config: (dir) => `
server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth:
  issuer: "http://127.0.0.1:${port}/sso"
  sso:
    clients:
      - { id: gateway-cli, redirect_uris: ["http://127.0.0.1/callback"], resources: ["http://127.0.0.1:${port}/mcp"] }
storage: { type: sqlite, path: "${dir}/gateway.db" }
backends:
  - id: demo
    url: "http://127.0.0.1:${demoPort}/mcp"
    allow_insecure_http: true
    tool_rules:
      - { tools: ["*"], publish: true }
      - { tools: [create_note, delete_note], write: true }
`
  })
  cleanup.push(() => gateway.stop())
  // The development setup grants the demo's tools to the administrator it creates.
  const created = await runGatewayCommand(["init-admin", "--config", gateway.configFile, "--password-stdin", "--dev"], {
    env: { GATEWAY_CONFIG_KEY: undefined },
    cwd: gateway.dir,
    stdin: `${password}\n`
  })
  expect(created.code, created.stderr).toBe(0)
  chromium = await launchChromium()
  cleanup.push(() => chromium.close())
}, 60_000)

afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

/** How an MCP client is told to start the bridge (any SDK's stdio transport takes these). */
const serverParameters = (credentials: string) => ({
  command: process.execPath,
  args: [gatewayExecutable(), "connect", `${gateway.baseUrl}/mcp`, "--no-browser", "--credentials", credentials],
  env: { PATH: process.env["PATH"] ?? "", HOME: gateway.dir },
  stderr: "pipe" as const
})

/** The bridge as an MCP client starts it: `gateway connect <url>` with its stderr captured. */
const bridge = (credentials: string) => {
  const transport = new StdioClientTransport(serverParameters(credentials))
  let stderr = ""
  const waiters = new Set<() => void>()
  transport.stderr?.on("data", (chunk) => {
    stderr += chunk
    for (const waiter of waiters) waiter()
  })
  /** The n-th sign-in address the bridge printed (1-based). */
  const signInUrl = (n: number) =>
    new Promise<string>((done) => {
      const check = () => {
        const found = [...stderr.matchAll(/(http:\/\/127\.0\.0\.1:\d+\/sso\/authorize\?\S+)/g)]
        if (found.length >= n) {
          waiters.delete(check)
          done(found[n - 1]![1]!)
        }
      }
      waiters.add(check)
      check()
    })
  return { transport, signInUrl, stderr: () => stderr }
}

/** The person: Chromium opens the address, signs in (enrolling TOTP the first time), lands on the bridge. */
const signInWithChromium = async (url: string) => {
  const context = await chromium.newContext()
  try {
    const page = await context.newPage()
    await page.goto(url)
    await page.fill("#username", "admin")
    await page.fill("#password", password)
    await page.click("button[type=submit]")
    if (totpSecret === undefined) {
      await page.waitForSelector("#totp-secret")
      totpSecret = base32Decode((await page.textContent("#totp-secret")) ?? "")
      await page.fill("#code", totpAt(totpSecret ?? new Uint8Array(), Date.now()))
    } else {
      await page.waitForSelector("form[action='/sso/mfa']")
      // The next time step: each code is accepted once.
      await page.fill("#code", totpAt(totpSecret, Date.now() + 30_000))
    }
    await Promise.all([page.waitForURL("http://127.0.0.1:*/callback?**"), page.click("button[type=submit]")])
    return (await page.textContent("body")) ?? ""
  } finally {
    await context.close()
  }
}

const noteTitles = (result: unknown) =>
  (JSON.parse((result as { content: Array<{ text: string }> }).content[0]!.text) as Array<{ title: string }>).map(
    (note) => note.title
  )

describe("gateway connect (stdio bridge)", () => {
  it("an SDK stdio client signs in through Chromium, lists and calls tools, is told clearly when its session was revoked, and works again after signing in", async () => {
    const credentials = join(gateway.dir, "bridge", "credentials.json")
    const { transport, signInUrl, stderr } = bridge(credentials)
    const client = new Client({ name: "stdio-test-client", version: "1.0.0" })
    cleanup.push(() => client.close())
    // The client's initialize waits while the person signs in.
    const connected = client.connect(transport)
    const firstUrl = new URL(await signInUrl(1))
    expect(firstUrl.searchParams.get("client_id")).toBe("gateway-cli")
    expect(firstUrl.searchParams.get("code_challenge_method")).toBe("S256")
    expect(firstUrl.searchParams.get("resource")).toBe(`${gateway.baseUrl}/mcp`)
    // Run with --no-browser: the address is printed to be opened, not said to be opened.
    expect(stderr()).toContain("gateway connect: Sign in to the gateway: open this address in a browser:")
    expect(stderr()).not.toContain("opened if possible")
    expect(await signInWithChromium(firstUrl.href)).toContain("You are signed in")
    await connected

    const tools = (await client.listTools()).tools.map((tool) => tool.name)
    expect(tools).toEqual(expect.arrayContaining(["demo__list_notes", "demo__create_note"]))
    await client.callTool({ name: "demo__create_note", arguments: { title: "From the bridge", body: "over stdio" } })
    expect(noteTitles(await client.callTool({ name: "demo__list_notes", arguments: {} }))).toContain("From the bridge")
    expect(statSync(credentials).mode & 0o777).toBe(0o600)
    // Only the refresh token is kept, and no token ever reaches standard error.
    const stored = JSON.parse(readFileSync(credentials, "utf8")) as { refresh_token: string }
    expect(stderr()).not.toContain(stored.refresh_token)

    // The session is revoked: its refresh token used a second time (reuse detection revokes the session).
    for (let attempt = 0; attempt < 2; attempt++) {
      await fetch(`${gateway.baseUrl}/sso/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          client_id: "gateway-cli",
          refresh_token: stored.refresh_token
        })
      })
    }
    const refused = await client.callTool({ name: "demo__list_notes", arguments: {} }).then(
      () => undefined,
      (error: { code?: number; message: string }) => error
    )
    expect(refused?.code).toBe(SESSION_ENDED_CODE)
    expect(refused?.message).toContain(
      "Your gateway session has ended (The session was revoked; sign in again.). Sign in again in your browser: " +
        "the bridge opens the sign-in page (unless run with --no-browser) and prints its address on its standard " +
        "error (the MCP client's log for this server) — then retry."
    )
    // The new sign-in is already under way, its address on standard error only: the answer the client
    // shows (and may log or hand to a model) carries neither its state nor the loopback port.
    const secondUrl = new URL(await signInUrl(2))
    const redirect = new URL(secondUrl.searchParams.get("redirect_uri") ?? "")
    expect(refused?.message).not.toMatch(/https?:\/\//)
    expect(refused?.message).not.toContain(secondUrl.searchParams.get("state"))
    expect(refused?.message).not.toContain(redirect.port)
    // Once the person has signed in, the same client carries on.
    expect(await signInWithChromium(secondUrl.href)).toContain("You are signed in")
    expect(noteTitles(await client.callTool({ name: "demo__list_notes", arguments: {} }))).toContain("From the bridge")
    await client.close()
  }, 90_000)

  it("the next run reuses the stored sign-in without a browser (MCP SDK 1.x client)", async () => {
    const credentials = join(gateway.dir, "bridge", "credentials.json")
    const before = JSON.parse(readFileSync(credentials, "utf8")) as { refresh_token: string }
    const { Client: ClientV1 } = await import("@modelcontextprotocol/sdk/client/index.js")
    const { StdioClientTransport: StdioV1 } = await import("@modelcontextprotocol/sdk/client/stdio.js")
    const client = new ClientV1({ name: "stdio-test-client-v1", version: "1.0.0" })
    const transport = new StdioV1(serverParameters(credentials))
    let stderr = ""
    transport.stderr?.on("data", (chunk) => {
      stderr += chunk
    })
    cleanup.push(() => client.close())
    await client.connect(transport)
    const tools = (await client.listTools()).tools.map((tool) => tool.name)
    expect(tools).toContain("demo__read_note")
    const read = await client.callTool({ name: "demo__read_note", arguments: { id: "1" } })
    expect(JSON.stringify(read)).toContain("Welcome")
    expect(stderr).not.toContain("/sso/authorize")
    // The refresh token was rotated and saved.
    const after = JSON.parse(readFileSync(credentials, "utf8")) as { refresh_token: string }
    expect(after.refresh_token).not.toBe(before.refresh_token)
    await client.close()
  }, 60_000)
})
