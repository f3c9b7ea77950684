import { Effect, Exit, Scope } from "effect"
import { MembershipRepo } from "../src/store/memberships.js"
import { launchChromium } from "../test/support/browser.js"
import { consoleClient, consolePagePaths, consoleSignIn } from "../test/support/console.js"
import { type StoreKindUnderTest, storeKinds } from "../test/support/databases.js"
import { DIRECTORY_TOKEN } from "../test/support/directory.js"
import {
  ADMIN_PASSWORD,
  adminClient,
  defaultClients,
  inGateway,
  type OAuthGateway,
  oauthGateway
} from "../test/support/oauth-gateway.js"
import { snapshotBody } from "./directory.js"
import { percentile } from "./support/stats.js"
import { formatMs, type Table, verdict } from "./support/table.js"

export const name = "console"

/** Requests per page and store, after a few to warm up. */
const SAMPLES = 200
const WARM_UP = 10
const TARGET_P95_MS = 50
/** Memberships per person (0 to this, uniform): the directory bench's own shape (bench/directory.ts). */
const PER_USER = 256

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
/** The ids a list page links to (`/console/identities/<id>`, `/console/groups/<id>`). */
const linkedIds = (page: string, prefix: string): ReadonlyArray<string> =>
  [...page.matchAll(new RegExp(`href="${prefix}/([^"?/]+)"`, "g"))].map((match) => decodeURIComponent(match[1]!))

/**
 * The pages with path parameters that grow with the data: the person with the most memberships among
 * the first page of people (their groups and effective access), the group with the most members among
 * the first page of groups, and a filtered list of people (a bounded window of 2,000).
 */
const heavyPaths = async (gateway: OAuthGateway, cookie: string): Promise<ReadonlyArray<string>> => {
  const read = async (path: string) => (await fetch(gateway.adminUrl + path, { headers: { cookie } })).text()
  const people = linkedIds(await read("/console/identities"), "/console/identities")
  const groups = linkedIds(await read("/console/groups"), "/console/groups")
  const [person, group] = await Effect.runPromise(
    inGateway(gateway)(
      Effect.gen(function* () {
        const memberships = yield* MembershipRepo
        let busiest = { id: people[0]!, count: -1 }
        for (const id of people) {
          const count = (yield* memberships.forUser(id)).length
          if (count > busiest.count) busiest = { id, count }
        }
        const counts = yield* memberships.countsOf(groups)
        const largest = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? groups[0]!
        return [busiest.id, largest] as const
      })
    )
  )
  return [
    `/console/identities/${encodeURIComponent(person)}`,
    `/console/groups/${encodeURIComponent(group)}`,
    "/console/identities?q=person+99"
  ]
}

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
    for (const path of [...consolePagePaths, ...(await heavyPaths(gateway, cookie))]) {
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
      `Directory data: bench/directory.ts's snapshot (0-${PER_USER} memberships per person, about 1.28 million). Every GET page of the sections registry without path parameters is measured, then the person with the most memberships among the first page of people (groups and effective access), the group with the most members among the first page of groups, and a filtered list of people.`
    ]
  }
}
