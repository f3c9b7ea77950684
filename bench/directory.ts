import { monitorEventLoopDelay } from "node:perf_hooks"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { StorageConfig } from "../src/config/schema.js"
import { MembershipRepo } from "../src/store/memberships.js"
import { rawSqlLayer } from "../test/support/databases.js"
import { DIRECTORY_TOKEN } from "../test/support/directory.js"
import { storageOf } from "./support/auth-gateway.js"
import { ensureBuilt } from "./support/build.js"
import { newDeployment, removeDeployment, startGateway, waitServing } from "./support/gateway.js"
import { readRssMb } from "./support/rss.js"
import { sampleRss } from "./support/rss-sampler.js"
import { formatMb, formatMs, formatTimes, type Table, verdict } from "./support/table.js"

export const name = "directory"

const USERS = 10_000
const GROUPS = 2_000
const MAX_PER_USER = 256
const BODY_LIMIT = 8 * 1024 * 1024

/** A deterministic pseudo-random sequence, so every run pushes the same snapshot. */
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
  return seed / 2 ** 31
}

/**
 * 10,000 users, 2,000 groups and departments, 0-256 memberships per user (uniform), with short ids so
 * the body stays under the 8 MiB limit. `moved` changes one person's groups.
 */
export const snapshotBody = (version: number, perUser: number, moved = false) => {
  const next = random(42)
  const id = (index: number) => index.toString(36)
  const groups = Array.from({ length: GROUPS }, (_, index) => ({
    kind: index < GROUPS / 2 ? "group" : "department",
    id: id(index),
    name: `Group ${index}`
  }))
  let memberships = 0
  const users = Array.from({ length: USERS }, (_, index) => {
    const count = Math.floor(next() * (perUser + 1))
    const start = Math.floor(next() * (GROUPS / 2))
    const picked = Array.from({ length: count }, (_, n) => (start + n) % (GROUPS / 2))
    const mine = moved && index === 0 ? picked.map((group) => (group + 1) % (GROUPS / 2)) : picked
    memberships += mine.length
    return {
      subject: `person-${index}`,
      name: `Person ${index}`,
      active: true,
      groups: mine.filter((group) => group % 2 === 0).map(id),
      departments: mine.filter((group) => group % 2 === 1).map((group) => id(group + GROUPS / 2))
    }
  })
  const body = JSON.stringify({ version, groups, users })
  if (body.length > BODY_LIMIT) throw new Error(`the bench snapshot is ${body.length} bytes, over the limit`)
  return { body, memberships }
}

const put = async (baseUrl: string, body: string) => {
  const started = performance.now()
  const response = await fetch(`${baseUrl}/sso/directory`, {
    method: "PUT",
    headers: { authorization: `Bearer ${DIRECTORY_TOKEN}`, "content-type": "application/json" },
    body
  })
  const answer = (await response.json()) as Record<string, unknown>
  return { ms: performance.now() - started, status: response.status, answer }
}

/** How long `effect` took and the longest the event loop waited meanwhile (the pause other requests saw). */
const paused = async <A, E>(effect: Effect.Effect<A, E>) => {
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  // It measures from its first tick on: a pause before that is not seen.
  await new Promise((resume) => setTimeout(resume, 5))
  const started = performance.now()
  await Effect.runPromise(effect)
  const ms = performance.now() - started
  // The histogram records a pause when its timer fires late, after the pause: one more turn first.
  await new Promise((resume) => setTimeout(resume, 5))
  delay.disable()
  return { ms, longestPauseMs: delay.max / 1e6 }
}

/**
 * The member counts the Management API lists per group, counted for the first time after the pushes
 * (`MembershipRepo.countByGroup`, in this process, on the gateway's database once it has stopped);
 * baseline: one statement expanding every list, as the gateway counted on SQLite before.
 */
const countFigures = async (databaseFile: string) => {
  const storage: StorageConfig = { type: "sqlite", path: databaseFile }
  const layer = MembershipRepo.Default.pipe(Layer.provideMerge(rawSqlLayer(storage)))
  const oneStatement = Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`SELECT j.value AS group_id, COUNT(*) AS members
      FROM directory_memberships d, json_each(d.group_ids) AS j GROUP BY j.value`
  )
  const single = await paused(Effect.provide(oneStatement, layer))
  const sliced = await paused(
    Effect.provide(
      Effect.flatMap(MembershipRepo, (repo) => repo.countByGroup),
      layer
    )
  )
  return { single, sliced }
}

interface Figures {
  readonly count?: Awaited<ReturnType<typeof countFigures>>
  readonly checkOnlyMs: number
  readonly applyMs: number
  readonly reapplyMs: number
  readonly idleMb: number | undefined
  readonly peakMb: number | undefined
  readonly memberships: number
  readonly bytes: number
}

const measure = async (entry: string, kind: "sqlite" | "postgres", perUser: number): Promise<Figures> => {
  const scope = Effect.runSync(Scope.make())
  const deployment = await newDeployment(
    {},
    {
      auth: {
        sso: {
          upstream: {
            protocol: "oidc",
            issuer: "https://login.example.com",
            client_id: "g",
            client_secret_env: "UPSTREAM_SECRET"
          },
          directory_token_env: "DIRECTORY_TOKEN"
        }
      },
      ...(kind === "sqlite"
        ? {}
        : {
            storage: await Effect.runPromise(
              Effect.map(Scope.extend(storageOf("postgres", ""), scope), (storage) => ({
                type: "postgres",
                url: storage.type === "postgres" ? Redacted.value(storage.url) : ""
              }))
            )
          })
    }
  )
  const gateway = startGateway(entry, deployment, {
    env: { UPSTREAM_SECRET: "upstream-secret", DIRECTORY_TOKEN }
  })
  try {
    await waitServing(gateway)
    const first = snapshotBody(2, perUser)
    // Baseline: the same body read and checked, then refused as stale before anything is written.
    const seed = await put(deployment.baseUrl, JSON.stringify({ version: 1, groups: [], users: [] }))
    if (seed.status !== 200) throw new Error(`seed push answered ${seed.status}: ${JSON.stringify(seed.answer)}`)
    const stale = await put(deployment.baseUrl, snapshotBody(1, perUser).body)
    if (stale.status !== 409) throw new Error(`stale push answered ${stale.status}`)
    await new Promise((done) => setTimeout(done, 1_000))
    const idleMb = readRssMb(gateway.pid)
    const sampler = sampleRss(gateway.pid, 20)
    const applied = await put(deployment.baseUrl, first.body)
    const peakMb = sampler.stop()
    if (applied.status !== 200) throw new Error(`apply answered ${applied.status}: ${JSON.stringify(applied.answer)}`)
    const again = await put(deployment.baseUrl, snapshotBody(3, perUser, true).body)
    if (again.status !== 200 || (again.answer["memberships_added"] as number) > MAX_PER_USER) {
      throw new Error(`re-apply answered ${again.status}: ${JSON.stringify(again.answer)}`)
    }
    await gateway.stop()
    return {
      ...(kind === "sqlite" ? { count: await countFigures(deployment.databaseFile) } : {}),
      checkOnlyMs: stale.ms,
      applyMs: applied.ms,
      reapplyMs: again.ms,
      idleMb,
      peakMb,
      memberships: first.memberships,
      bytes: first.body.length
    }
  } finally {
    await gateway.stop()
    removeDeployment(deployment)
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  const rows: Array<ReadonlyArray<string>> = []
  const shapes: Array<string> = []
  for (const perUser of [MAX_PER_USER, 32]) {
    const sqlite = await measure(entry, "sqlite", perUser)
    const postgres = await measure(entry, "postgres", perUser)
    const shape = `0-${perUser} per user`
    shapes.push(
      `${shape}: ${sqlite.memberships.toLocaleString("en-US")} memberships, ${(sqlite.bytes / 1024 / 1024).toFixed(1)} MiB`
    )
    for (const [store, figures] of [
      ["SQLite", sqlite],
      ["PostgreSQL", postgres]
    ] as const) {
      const above =
        figures.peakMb === undefined || figures.idleMb === undefined ? undefined : figures.peakMb - figures.idleMb
      const ms = (value: number, target: number) => [
        formatMs(value),
        formatMs(figures.checkOnlyMs),
        formatTimes(value, figures.checkOnlyMs),
        `≤ ${target / 1000} s`,
        verdict(value <= target)
      ]
      rows.push(
        [`${shape}, ${store}: apply (first push)`, ...ms(figures.applyMs, 3_000)],
        [`${shape}, ${store}: re-apply, one person moved`, ...ms(figures.reapplyMs, 1_000)],
        ...(figures.count === undefined
          ? []
          : [
              [
                `${shape}, ${store}: member counts after the push, longest pause of the event loop`,
                formatMs(figures.count.sliced.longestPauseMs),
                formatMs(figures.count.single.longestPauseMs),
                formatTimes(figures.count.sliced.longestPauseMs, figures.count.single.longestPauseMs),
                "≤ 50 ms",
                verdict(figures.count.sliced.longestPauseMs <= 50)
              ],
              [
                `${shape}, ${store}: member counts after the push, whole count`,
                formatMs(figures.count.sliced.ms),
                formatMs(figures.count.single.ms),
                formatTimes(figures.count.sliced.ms, figures.count.single.ms),
                "(information)",
                "—"
              ]
            ]),
        [
          `${shape}, ${store}: peak RSS during apply, above idle`,
          formatMb(above),
          formatMb(figures.idleMb),
          "—",
          "≤ 150 MB",
          verdict(above !== undefined && above <= 150)
        ]
      )
    }
  }
  return {
    title: `Directory snapshot: ${USERS.toLocaleString("en-US")} users, ${GROUPS.toLocaleString("en-US")} groups and departments (${shapes.join("; ")})`,
    columns: ["measure", "gateway", "baseline", "ratio", "target", "verdict"],
    rows,
    notes: [
      "Baseline: the same body pushed with a stale version — sent, read, parsed and checked, then refused before anything is written (for RSS: the idle gateway). Spawned gateway (`node dist/main.js serve`); RSS sampled every 20 ms. Memberships per user are uniform in the range shown.",
      "Member counts (SQLite only: PostgreSQL counts in its own process): the counts `GET /api/v1/identities` shows per group, counted for the first time after the pushes, in the bench's process on the stopped gateway's database; longest pause measured by `monitorEventLoopDelay` (1 ms resolution). Baseline: one statement expanding every list, as the gateway counted on SQLite until it read the lists in slices."
    ]
  }
}
