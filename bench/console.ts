import { Effect, Exit, Scope } from "effect"
import { launchChromium } from "../test/support/browser.js"
import { consoleClient, consolePagePaths, consoleSignIn } from "../test/support/console.js"
import { type StoreKindUnderTest, storeKinds } from "../test/support/databases.js"
import { DIRECTORY_TOKEN } from "../test/support/directory.js"
import { ADMIN_PASSWORD, adminClient, defaultClients, oauthGateway } from "../test/support/oauth-gateway.js"
import { snapshotBody } from "./directory.js"
import { percentile } from "./support/stats.js"
import { formatMs, type Table, verdict } from "./support/table.js"

export const name = "console"

/** Requests per page and store, after a few to warm up. */
const SAMPLES = 200
const WARM_UP = 10
const TARGET_P95_MS = 50
/** Memberships per person (0 to this, uniform): the directory bench's data with a lighter push. */
const PER_USER = 8

interface Row {
  readonly store: StoreKindUnderTest
  readonly path: string
  readonly status: number
  readonly p50: number
  readonly p95: number
}

/**
 * One store: an in-process gateway in `admin.mode: remote` holding the directory benchmark's 10,000
 * people and 2,000 groups, an administrator signed in with Chromium, then every GET console page
 * without path parameters fetched `SAMPLES` times in a row with the session cookie — the whole admin
 * pipeline (session, the admin check, the page's services, the layout) — timed per request.
 */
const measureStore = async (kind: StoreKindUnderTest): Promise<ReadonlyArray<Row>> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const gateway = await Effect.runPromise(
      Scope.extend(
        oauthGateway({
          kind,
          env: { UPSTREAM_SECRET: "upstream-secret", DIRECTORY_TOKEN },
          auth: (origin, adminUrl) => ({
            sso: {
              upstream: {
                protocol: "oidc",
                issuer: "https://login.example.com",
                client_id: "gateway",
                client_secret_env: "UPSTREAM_SECRET"
              },
              directory_token_env: "DIRECTORY_TOKEN",
              clients: [...defaultClients(origin, adminUrl), adminClient(adminUrl), consoleClient(adminUrl)]
            }
          }),
          admin: (adminUrl) => ({ mode: "remote", public_url: adminUrl, client_id: "console" })
        }),
        scope
      )
    )
    const pushed = await fetch(`${gateway.baseUrl}/sso/directory`, {
      method: "PUT",
      headers: { authorization: `Bearer ${DIRECTORY_TOKEN}`, "content-type": "application/json" },
      body: snapshotBody(1, PER_USER).body
    })
    if (pushed.status !== 200) throw new Error(`the directory push answered ${pushed.status}: ${await pushed.text()}`)
    const chromium = await launchChromium()
    let cookie: string
    try {
      const context = await chromium.newContext()
      const page = await context.newPage()
      await consoleSignIn(page, gateway.adminUrl, "admin", ADMIN_PASSWORD, new Map())
      const found = (await context.cookies(`${gateway.adminUrl}/console`)).find(
        (each) => each.name === "gateway_console"
      )
      if (found === undefined) throw new Error("no console session cookie after sign-in")
      cookie = `${found.name}=${found.value}`
    } finally {
      await chromium.close()
    }
    const rows: Array<Row> = []
    for (const path of consolePagePaths) {
      const times: Array<number> = []
      let status = 0
      for (let index = 0; index < WARM_UP + SAMPLES; index++) {
        const started = performance.now()
        const response = await fetch(gateway.adminUrl + path, { headers: { cookie }, redirect: "manual" })
        await response.arrayBuffer()
        if (index >= WARM_UP) times.push(performance.now() - started)
        status = response.status
      }
      rows.push({ store: kind, path, status, p50: percentile(times, 50), p95: percentile(times, 95) })
    }
    return rows
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const run = async (): Promise<Table> => {
  const rows: Array<Row> = []
  for (const kind of storeKinds) rows.push(...(await measureStore(kind)))
  return {
    title: `Console pages: render time with 10,000 people and 2,000 groups (${SAMPLES} requests each)`,
    columns: ["store", "page", "status", "p50", "p95", `p95 < ${TARGET_P95_MS} ms`],
    rows: rows.map((row) => [
      row.store,
      row.path,
      String(row.status),
      formatMs(row.p50),
      formatMs(row.p95),
      verdict(row.status === 200 && row.p95 < TARGET_P95_MS)
    ]),
    notes: [
      "Each request is the whole admin pipeline over loopback HTTP: the session cookie, the Management API's admin check, the page's services, the layout.",
      `Directory data: bench/directory.ts's snapshot with 0-${PER_USER} memberships per person. Every GET page of the sections registry without path parameters is measured.`
    ]
  }
}
