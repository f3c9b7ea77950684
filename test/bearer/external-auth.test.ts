/**
 * `auth.mode: external` for real (docs/mcp.md, "Tokens"): the
 * issuer's key set served over HTTPS on loopback with a throw-away CA that the gateway trusts through
 * `auth.external.ca_file`. Verification, key rotation with a bounded refetch, an unreachable or
 * untrusted key set, and background loading that never blocks and stops with the generation.
 */
import { writeFileSync } from "node:fs"
import { type AddressInfo, createServer } from "node:net"
import { join } from "node:path"
import { Duration, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SessionRejected } from "../../src/bearer/caller.js"
import { type ExternalIssuer, type SigningKey, startExternalIssuer } from "../support/external-issuer.js"
import { alphaTools, startBackend, type TestBackend } from "../support/mcp-backends.js"
import { connectClient, jsonRpcOf, rawPost } from "../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../support/mcp-gateway.js"
import { makeTestCa, type TestCa } from "../support/test-ca.js"

const COOLDOWN_MS = 600
const timing = {
  fetchTimeout: Duration.seconds(2),
  unknownKidCooldown: Duration.millis(COOLDOWN_MS),
  retryFirst: Duration.millis(50),
  retryMax: Duration.millis(200)
}

let ca: TestCa
let idp: ExternalIssuer
let key: SigningKey
let alpha: TestBackend
let gateway: TestGateway
let guardCalls = 0
const gateways = new Set<TestGateway>()
const issuers: Array<ExternalIssuer> = []

// If external mode ever consulted the SessionGuard, this one would refuse the token and count the call.
const spyGuard = {
  check: () =>
    Effect.suspend(() => {
      guardCalls++
      return Effect.fail(new SessionRejected({ reason: "external tokens have no stored session" }))
    }),
  checkNow: () => {
    guardCalls++
    return false
  }
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))
const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

const externalGateway = async (
  issuer: ExternalIssuer,
  external: Record<string, unknown> = { ca_file: ca.caFile }
): Promise<TestGateway> => {
  const started = await startTestGateway({
    auth: {
      mode: "external",
      issuer: issuer.issuer,
      external: { jwks_url: issuer.jwksUrl, algorithms: ["ES256", "EdDSA"], ...external }
    },
    sessionGuard: spyGuard,
    externalJwksTiming: timing,
    patch: {
      backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }]
    }
  })
  gateways.add(started)
  return started
}

const closeGateway = (target: TestGateway) => {
  gateways.delete(target)
  return target.close()
}

const readiness = async (target: TestGateway) => {
  const response = await fetch(`${target.baseUrl}/readyz`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

const untilReady = async (target: TestGateway, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while ((await readiness(target)).status !== 200) {
    if (Date.now() > deadline) throw new Error("the gateway did not become ready")
    await sleep(25)
  }
}

const mint = (signing: SigningKey, options: Parameters<ExternalIssuer["mint"]>[2] = {}, target = gateway) =>
  idp.mint(signing, target.mcpUrl, options)

beforeAll(async () => {
  ca = makeTestCa()
  idp = await startExternalIssuer(ca)
  key = await idp.newKey("ES256")
  idp.publish([key])
  alpha = await startBackend("alpha", alphaTools)
  gateway = await externalGateway(idp)
  await untilReady(gateway)
})

afterAll(async () => {
  for (const each of gateways) await each.close()
  for (const each of issuers) await each.stop()
  await idp?.stop()
  await alpha?.stop()
  ca?.remove()
})

describe("external mode: tokens of the configured issuer", () => {
  it("a valid token is accepted (raw JSON-RPC and the client SDK) and no SessionGuard is consulted", async () => {
    const token = await mint(key)
    const response = await rawPost(gateway.mcpUrl, list, bearer(token))
    expect(response.status).toBe(200)
    const { result } = (await jsonRpcOf(response)) as { result: { tools: Array<{ name: string }> } }
    expect(result.tools.map((tool) => tool.name)).toContain("alpha__echo")

    const client = await connectClient(gateway.mcpUrl, token)
    const called = await client.callTool({ name: "alpha__echo", arguments: { message: "via the external issuer" } })
    expect(called.content).toEqual([{ type: "text", text: "via the external issuer" }])
    await client.close()
    expect(guardCalls).toBe(0)
  })

  it.each([
    ["wrong issuer", { issuer: "https://other-issuer.test.example" }],
    ["wrong audience", { audience: "https://elsewhere.example.com/mcp" }],
    ["expired", { expiresInSeconds: -60 }],
    ["unknown kid", { kid: "never-published" }]
  ] as const)("%s: 401 invalid_token", async (_, options) => {
    const response = await rawPost(gateway.mcpUrl, list, bearer(await mint(key, options)))
    expect(response.status).toBe(401)
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token", .*resource_metadata="/)
    expect(await response.json()).toMatchObject({ error: "invalid_token" })
  })

  it("an algorithm outside auth.external.algorithms: 401 invalid_token, even with the key published", async () => {
    const rsa = await idp.newKey("RS256")
    idp.publish([key, rsa])
    await sleep(COOLDOWN_MS)
    const response = await rawPost(gateway.mcpUrl, list, bearer(await mint(rsa)))
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({
      error: "invalid_token",
      error_description: "The token's signing algorithm is not accepted."
    })
  })

  it("key rotation: an unknown kid refetches the key set once, shared and at most once per cooldown", async () => {
    await sleep(COOLDOWN_MS)
    const rotated = await idp.newKey("EdDSA")
    idp.publish([key, rotated])
    const before = idp.fetches()
    expect((await rawPost(gateway.mcpUrl, list, bearer(await mint(rotated)))).status).toBe(200)
    expect(idp.fetches()).toBe(before + 1)

    // Within the cooldown a newer key is not fetched: its tokens are refused, and nothing is fetched.
    const newer = await idp.newKey("ES256")
    idp.publish([key, rotated, newer])
    expect((await rawPost(gateway.mcpUrl, list, bearer(await mint(newer)))).status).toBe(401)
    expect(idp.fetches()).toBe(before + 1)

    // After the cooldown, concurrent tokens with the new kid share one fetch.
    await sleep(COOLDOWN_MS)
    const tokens = await Promise.all(Array.from({ length: 5 }, () => mint(newer)))
    const answers = await Promise.all(tokens.map((token) => rawPost(gateway.mcpUrl, list, bearer(token))))
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200])
    expect(idp.fetches()).toBe(before + 2)
    expect(guardCalls).toBe(0)
  })
})

describe("external mode: loading the key set", () => {
  it("an unreachable key set never blocks: the generation builds, /readyz is 503, /mcp answers 503 at once, until it loads", async () => {
    const down = await startExternalIssuer(ca)
    issuers.push(down)
    const downKey = await down.newKey("ES256")
    down.publish([downKey])
    await down.stop()

    const started = Date.now()
    const target = await externalGateway(down)
    expect(Date.now() - started).toBeLessThan(3_000)
    const report = await readiness(target)
    expect(report.status).toBe(503)
    expect(report.body).toMatchObject({ auth_verifier_ready: false })

    const token = await down.mint(downKey, target.mcpUrl)
    const asked = Date.now()
    const refused = await rawPost(target.mcpUrl, list, bearer(token))
    expect(Date.now() - asked).toBeLessThan(1_000)
    expect(refused.status).toBe(503)
    expect(refused.headers.get("retry-after")).toBe("5")
    expect(await refused.json()).toMatchObject({ error: "verifier_unavailable" })

    await down.start()
    await untilReady(target)
    expect((await readiness(target)).body).toMatchObject({ auth_verifier_ready: true })
    expect((await rawPost(target.mcpUrl, list, bearer(token))).status).toBe(200)
  })

  it("a key set host that accepts connections but never answers, or does not resolve, holds nothing up", async () => {
    const blackHole = createServer(() => {})
    await new Promise<void>((done) => blackHole.listen(0, "127.0.0.1", done))
    const { port } = blackHole.address() as AddressInfo
    try {
      for (const jwksUrl of [`https://127.0.0.1:${port}/jwks`, "https://issuer.invalid/jwks"]) {
        const started = Date.now()
        const target = await externalGateway({ ...idp, jwksUrl })
        // Requests are answered while the fetch hangs (its timeout here is 2 s), not after it.
        const refused = await rawPost(target.mcpUrl, list, bearer(await mint(key, {}, target)))
        expect(refused.status).toBe(503)
        const closing = Date.now()
        await closeGateway(target)
        expect(Date.now() - closing).toBeLessThan(1_000)
        expect(Date.now() - started).toBeLessThan(1_500)
      }
    } finally {
      blackHole.close()
    }
  })

  it("failed loads are retried with capped backoff, and the retries stop when the generation closes", async () => {
    const failing = await startExternalIssuer(ca)
    issuers.push(failing)
    failing.failing(true)
    const target = await externalGateway(failing)
    await sleep(1_000)
    // 50 ms doubling to 200 ms: about 7 attempts in a second; unbounded retrying would be hundreds.
    const attempts = failing.fetches()
    expect(attempts).toBeGreaterThanOrEqual(3)
    expect(attempts).toBeLessThanOrEqual(12)
    expect((await readiness(target)).body).toMatchObject({ auth_verifier_ready: false })

    await closeGateway(target)
    const atClose = failing.fetches()
    await sleep(600)
    expect(failing.fetches()).toBe(atClose)
  })

  it("a key set served with a certificate outside ca_file's trust is never used", async () => {
    const otherCa = makeTestCa("another CA")
    try {
      const target = await externalGateway(idp, { ca_file: otherCa.caFile })
      const before = idp.fetches()
      await sleep(500)
      expect((await readiness(target)).body).toMatchObject({ auth_verifier_ready: false })
      // The TLS handshake fails, so no key set request ever reaches the issuer.
      expect(idp.fetches()).toBe(before)
      const refused = await rawPost(target.mcpUrl, list, bearer(await mint(key, {}, target)))
      expect(refused.status).toBe(503)
    } finally {
      otherCa.remove()
    }
  })

  it("without ca_file the system roots apply, which do not include the test CA", async () => {
    const target = await externalGateway(idp, {})
    await sleep(500)
    expect((await readiness(target)).body).toMatchObject({ auth_verifier_ready: false })
  })

  it("a ca_file that holds no certificate stops the generation build, naming the key", async () => {
    const notPem = join(ca.dir, "not-a-certificate.pem")
    writeFileSync(notPem, "this is not a certificate\n")
    await expect(externalGateway(idp, { ca_file: notPem })).rejects.toThrow(/auth\.external\.ca_file/)
    await expect(externalGateway(idp, { ca_file: join(ca.dir, "missing.pem") })).rejects.toThrow(/cannot be read/)
  })
})
