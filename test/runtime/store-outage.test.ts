/**
 * docs/operations.md, "When the database goes away" — a real `gateway serve` on a PostgreSQL server of
 * the test's own, stopped for a few seconds under load from signed-in callers: every route that needs the
 * store answers `503 store_unavailable` with `Retry-After`, the outage writes one line when it starts and
 * one when it ends (no line per request, no stack trace), `/readyz` names the store, a refresh token
 * presented during the outage still works afterwards, and calls succeed again soon after the database
 * answers. The figures are printed (the lead's report quotes them). Webhooks and the audit archive are
 * on: their workers, polling the store every second, count in the outage too instead of logging each
 * failed pass with a stack trace.
 */

import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newArchiveKeyText } from "../support/archive-file.js"
import { type ArchiveReceiver, startArchiveReceiver } from "../support/archive-receiver.js"
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
import { type PrivatePostgres, privatePostgres } from "../support/private-postgres.js"
import { makeTestCa } from "../support/test-ca.js"

const PASSWORD = "pg-secret-never-logged"
const OUTAGE_MS = 6_000
const CALLERS = 8

let pg: PrivatePostgres
let gateway: GatewayProcess
let adminUrl: string
let receiver: ArchiveReceiver
const ca = makeTestCa()
const archiveKey = newArchiveKeyText()
const env = {
  GATEWAY_CONFIG_KEY: newConfigKey(),
  AUDIT_KEY: archiveKey,
  WEBHOOK_SECRET: "webhook-secret-never-logged-0123456789abcdef"
}

beforeAll(async () => {
  pg = await privatePostgres()
  receiver = await startArchiveReceiver(ca, join(tmpdir(), `store-outage-${process.pid}.jsonl`), {
    outage: Buffer.from(archiveKey, "base64").subarray(32).toString("base64")
  })
  const port = await freePort()
  const adminPort = await freePort()
  adminUrl = `http://127.0.0.1:${adminPort}`
  gateway = await startGateway({
    port,
    env,
    config: () =>
      [
        `server: { listen: 127.0.0.1:${port}, public_url: http://127.0.0.1:${port}/mcp }`,
        "auth:",
        `  issuer: http://127.0.0.1:${port}/sso`,
        "  sso:",
        "    clients:",
        `      - { id: cli, redirect_uris: ["http://127.0.0.1/callback"], resources: ["http://127.0.0.1:${port}/mcp"] }`,
        `      - { id: admin-cli, redirect_uris: ["http://127.0.0.1/callback"], resources: ["${adminUrl}"] }`,
        `storage: { type: postgres, url: "${pg.url(PASSWORD)}" }`,
        "admin:",
        `  listen: "127.0.0.1:${adminPort}"`,
        "  approvals:",
        `    notifications: { url: "${receiver.url}", secret: "$${"{WEBHOOK_SECRET}"}", ca_file: "${ca.caFile}" }`,
        `    audit_archive: { url: "${receiver.url}", key_id: outage, signing_key: "$${"{AUDIT_KEY}"}", ca_file: "${ca.caFile}" }`,
        ""
      ].join("\n")
  })
  const init = await runGateway(["init-admin", "--password-stdin", "--config", gateway.configFile], {
    env,
    stdin: ADMIN_PASSWORD
  })
  expect(init.code).toBe(0)
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
  await receiver?.close()
  ca.remove()
  pg?.remove()
})

/** When the database answers a query (a client of the test's own, polled every 10 ms). */
const databaseAnswers = async (url: string): Promise<number> => {
  for (;;) {
    // Building the client connects and runs a first query.
    const ok = await Effect.runPromise(
      Effect.scoped(Layer.build(PgClient.layer({ url: Redacted.make(url), connectTimeout: "1 second" }))).pipe(
        Effect.as(true),
        Effect.catchAllCause(() => Effect.succeed(false))
      )
    )
    if (ok) return performance.now()
    await new Promise((done) => setTimeout(done, 10))
  }
}

interface Answer {
  readonly at: number
  readonly status: number
  readonly retryAfter: string | null
  readonly error: string | undefined
}

const answerOf = async (response: Response): Promise<Answer> => {
  const text = await response.text()
  let error: string | undefined
  try {
    const body = JSON.parse(text) as { error?: unknown }
    error = typeof body.error === "string" ? body.error : undefined
  } catch {
    error = undefined
  }
  return { at: performance.now(), status: response.status, retryAfter: response.headers.get("retry-after"), error }
}

const readyz = async () => {
  const response = await fetch(`${gateway.baseUrl}/readyz`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

const logEvents = (from: number) =>
  gateway
    .stderr()
    .slice(from)
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

describe("when the database goes away (spawned gateway, PostgreSQL of its own)", () => {
  it("answers 503 store_unavailable with Retry-After, logs the outage once, reports store_ready, and recovers", async () => {
    const browser = new Browser(gateway.baseUrl)
    const totp: { secret?: Uint8Array } = {}
    const signedIn = await exchange(
      gateway.baseUrl,
      await obtainCode(browser, { scope: "offline_access", totp, nowMs: Date.now() })
    )
    expect(signedIn.response.status).toBe(200)
    const accessToken = String(signedIn.body["access_token"])
    const refreshToken = String(signedIn.body["refresh_token"])
    const admin = await exchange(
      gateway.baseUrl,
      await obtainCode(browser, { clientId: "admin-cli", resource: adminUrl, totp, nowMs: Date.now() })
    )
    expect(admin.response.status).toBe(200)
    const adminToken = String(admin.body["access_token"])

    const before = await readyz()
    expect(before).toEqual({
      status: 200,
      body: {
        backends_ready: 0,
        backends_total: 0,
        required_ready: 0,
        required_total: 0,
        auth_verifier_ready: true,
        store_ready: true
      }
    })

    // Eight callers, each calling /mcp in a loop with a signed-in token.
    const answers: Array<Answer> = []
    let loading = true
    const callers = Array.from({ length: CALLERS }, async () => {
      while (loading) {
        try {
          answers.push(await answerOf(await mcpInitialize(gateway.baseUrl, accessToken)))
        } catch {
          answers.push({ at: performance.now(), status: 0, retryAfter: null, error: "fetch failed" })
        }
      }
    })
    while (answers.length < 4 * CALLERS) await new Promise((done) => setTimeout(done, 20))
    expect(answers.every((answer) => answer.status === 200)).toBe(true)

    const logFrom = gateway.stderr().length
    const stoppedAt = performance.now()
    await pg.stop()

    // Past the session cache's 5 s, /mcp needs the store on every call.
    await new Promise((done) => setTimeout(done, OUTAGE_MS - (performance.now() - stoppedAt) - 600))
    const during = {
      token: await answerOf(
        await fetch(`${gateway.baseUrl}/sso/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "refresh_token", client_id: "cli", refresh_token: refreshToken })
        })
      ),
      admin: await answerOf(
        await fetch(`${adminUrl}/api/v1/identities`, { headers: { authorization: `Bearer ${adminToken}` } })
      ),
      signInPage: await answerOf(
        await browser.get(
          authorizePath({
            client_id: "cli",
            redirect_uri: "http://127.0.0.1:45000/callback",
            response_type: "code",
            code_challenge: pkcePair().challenge,
            code_challenge_method: "S256"
          })
        )
      ),
      approvalsPage: await answerOf(await browser.get("/sso/approvals")),
      readiness: await readyz()
    }
    const restartAt = performance.now()
    const restarted = pg.start()
    const answersAt = await databaseAnswers(pg.url())
    let readyAt = 0
    while (readyAt === 0) {
      if ((await readyz()).status === 200) readyAt = performance.now()
      else await new Promise((done) => setTimeout(done, 10))
    }
    await restarted
    await new Promise((done) => setTimeout(done, 500))
    loading = false
    await Promise.all(callers)

    // Every route that needs the store: 503 store_unavailable with Retry-After.
    for (const answer of [during.token, during.admin, during.signInPage, during.approvalsPage]) {
      expect(answer).toMatchObject({ status: 503, retryAfter: "2", error: "store_unavailable" })
    }
    expect(during.readiness).toEqual({
      status: 503,
      body: {
        backends_ready: 0,
        backends_total: 0,
        required_ready: 0,
        required_total: 0,
        auth_verifier_ready: true,
        store_ready: false
      }
    })
    const outage = answers.filter((answer) => answer.at > stoppedAt && answer.at < answersAt)
    const refused = outage.filter((answer) => answer.status !== 200)
    expect(refused.length).toBeGreaterThan(0)
    for (const answer of refused) {
      expect(answer).toMatchObject({ status: 503, retryAfter: "2", error: "store_unavailable" })
    }
    expect(answers.some((answer) => answer.status === 500)).toBe(false)

    // The log: the outage in two lines (start with its reason, end with its duration), no line per
    // request, no stack trace, never the database password.
    const events = logEvents(logFrom)
    const storeLines = events.filter(
      (entry) =>
        entry["event"] === "store.unavailable" ||
        entry["event"] === "store.recovered" ||
        entry["msg"] === "unhandled failure" ||
        entry["msg"] === "request"
    )
    expect(storeLines.map((entry) => entry["event"])).toEqual(["store.unavailable", "store.recovered"])
    expect(storeLines[0]).toMatchObject({ level: "error", reason: expect.stringMatching(/^(postgres|connection) /) })
    expect(storeLines[1]).toMatchObject({ level: "info", unavailable_ms: expect.any(Number) })
    expect(events.filter((entry) => entry["cause"] !== undefined)).toEqual([])
    expect(events.filter((entry) => String(entry["event"]).startsWith("readiness."))).toMatchObject([
      { event: "readiness.lost", level: "warn", reasons: [expect.stringMatching(/^store unavailable/)] },
      { event: "readiness.restored" }
    ])
    expect(gateway.stderr()).not.toContain(PASSWORD)

    // Recovery: the first /mcp call that succeeded after the database answered again.
    const firstOk = answers.find((answer) => answer.at > restartAt && answer.status === 200)
    expect(firstOk).toBeDefined()
    // Negative when the gateway's pool reconnected before the test's own client (polling every 10 ms) did.
    const recoveryMs = (firstOk?.at ?? 0) - answersAt
    expect(recoveryMs).toBeLessThan(1_000)

    // The refresh token refused during the outage was not consumed: it rotates now, and its access token works.
    const rotated = await refresh(gateway.baseUrl, refreshToken)
    expect(rotated.response.status).toBe(200)
    expect((await mcpInitialize(gateway.baseUrl, String(rotated.body["access_token"]))).status).toBe(200)

    console.log(
      JSON.stringify({
        outage_ms: Math.round(answersAt - stoppedAt),
        calls: outage.length,
        refused_503: refused.length,
        store_log_lines: storeLines.length,
        other_lines: events.length - storeLines.length,
        recovery_ms_first_call: Math.round(recoveryMs),
        first_call_after_restart_began_ms: Math.round((firstOk?.at ?? 0) - restartAt),
        recovery_ms_readyz: Math.round(readyAt - answersAt),
        unavailable_reason: storeLines[0]?.["reason"]
      })
    )
  }, 45_000)
})
