import { randomBytes, randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Either, Exit, Layer, Logger, LogLevel, Redacted, Scope } from "effect"
import { stringify } from "yaml"
import { type Intent, intentText, operationKey } from "../src/approvals/intent.js"
import { Approvals } from "../src/approvals/service.js"
import { approvalSettingsOf } from "../src/approvals/settings.js"
import { parseConfig } from "../src/config/load.js"
import type { GatewayConfig } from "../src/config/schema.js"
import { parseConfigKey } from "../src/crypto/config-key.js"
import { sha256Hex } from "../src/crypto/hashing.js"
import { Sealer, type SealerApi } from "../src/crypto/sealer.js"
import { baseLayer } from "../src/runtime/base.js"
import { ApprovalRepo } from "../src/store/approvals.js"
import { shiftedClock } from "../test/support/shifted-clock.js"
import { approvalBackends, arrangeApprovalPeople, formField, toolCall, toolsList } from "./support/approvals.js"
import { storageOf } from "./support/auth-gateway.js"
import { ensureBuilt } from "./support/build.js"
import { devToken, newDeployment, removeDeployment, startGateway, waitServing } from "./support/gateway.js"
import { freePort } from "./support/http.js"
import { keepAliveAgent, postTimed, resultOf, sendTimed } from "./support/json-rpc.js"
import { startMcpBackends } from "./support/mcp-backend.js"
import { interleavedLatencies, roundOrder, type Target } from "./support/mcp-measure.js"
import { percentile } from "./support/stats.js"
import { formatCount, formatMs, formatTimes, type Table, verdict } from "./support/table.js"

export const name = "approvals"

/** Whole cycles per store, after WARMUP_CYCLES, in blocks interleaved (ABBA) with as many plain writes. */
const CYCLE_BLOCK = 25
const CYCLE_ROUNDS = 4
const WARMUP_CYCLES = 10
/**
 * Status calls of a pending approval and the read-only baseline: STATUS_ROUNDS blocks of STATUS_BLOCK each,
 * interleaved; then a completed approval's status and tools/list, SIDE_ROUNDS blocks each.
 */
const STATUS_BLOCK = 200
const STATUS_ROUNDS = 10
const SIDE_ROUNDS = 2
const STATUS_WARMUP = 50
/** Finished approvals for the store-size figures, of which VIA_REPOSITORY go through the repository's lifecycle. */
const FINISHED = 100_000
const VIA_REPOSITORY = 300
const INSERT_BATCH = 500
const BULK_TRANSACTION = 10_000
/** Rows per `ApprovalRepo.purge` call when the 100,000 are reduced to tombstones. */
const PURGE_BATCH = 10_000
/** Backlogs of due approvals the maintenance tick's own sweep (batches of 500) is timed on. */
const SWEEP_BACKLOGS = [2_500, 10_000] as const
const TOMBSTONE_TARGET_BYTES = 200

type Row = ReadonlyArray<string>
type Kind = "sqlite" | "postgres"

let phaseStarted = performance.now()
/** Progress on stderr (stdout stays markdown): what finished, and how long it took. */
const progress = (done: string) => {
  const now = performance.now()
  process.stderr.write(`bench: approvals: ${done} (${((now - phaseStarted) / 1000).toFixed(1)} s)\n`)
  phaseStarted = now
}

const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length
const rate = (ms: number) => `${(1000 / ms).toFixed(1)}/s`
const formatBytes = (bytes: number) =>
  bytes >= 10 * 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${formatCount(bytes)} B`
const structured = (result: Record<string, unknown>) => (result["structuredContent"] ?? {}) as Record<string, unknown>

// ——— 1 and 2: a spawned gateway, a real backend, the review page ———

interface CycleSteps {
  readonly ask: number
  readonly page: number
  readonly approve: number
  readonly resume: number
  readonly total: number
}

interface GatewayFigures {
  readonly cycles: ReadonlyArray<CycleSteps>
  readonly plainWrites: ReadonlyArray<number>
  readonly statusPending: ReadonlyArray<number>
  readonly statusCompleted: ReadonlyArray<number>
  readonly readCall: ReadonlyArray<number>
  readonly list: ReadonlyArray<number>
}

const measureGateway = async (
  entry: string,
  kind: Kind,
  ports: readonly [number, number, number]
): Promise<GatewayFigures> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const storage = kind === "sqlite" ? undefined : await Effect.runPromise(Scope.extend(storageOf(kind, ""), scope))
    const deployment = await newDeployment(
      { backends: approvalBackends(ports) },
      storage?.type === "postgres" ? { storage: { type: "postgres", url: Redacted.value(storage.url) } } : {}
    )
    try {
      const { cookie } = await arrangeApprovalPeople(deployment)
      const gateway = startGateway(entry, deployment, { dev: true })
      try {
        await waitServing(gateway)
        const token = await devToken(entry, deployment)
        progress(`${kind}: gateway started`)
        return await measureCycles(deployment.baseUrl, `${deployment.baseUrl}/mcp`, token, cookie, kind)
      } finally {
        await gateway.stop()
      }
    } finally {
      removeDeployment(deployment)
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const measureCycles = async (
  origin: string,
  mcpUrl: string,
  token: string,
  cookie: string,
  kind: Kind
): Promise<GatewayFigures> => {
  const mcp = keepAliveAgent()
  const browser = keepAliveAgent()
  const call = async (target: Target) => {
    const timed = await postTimed(mcp, target.url, target.body, target.headers)
    return { result: resultOf(timed), ms: timed.ms }
  }
  const listed = (await call(toolsList(mcpUrl, token))).result["tools"] as ReadonlyArray<{ readonly name: string }>
  const names = listed.map((tool) => tool.name)
  for (const wanted of [
    "ops__echo",
    "plain__echo",
    "reader__echo",
    "gateway_approval_status",
    "gateway_resume_approval"
  ]) {
    if (!names.includes(wanted)) throw new Error(`tools/list lacks ${wanted} (has ${names.join(", ")})`)
  }

  let sequence = 0
  const nextArgs = () => ({ text: `bench ${sequence}`, operation_id: `bench-${kind}-${sequence++}` })

  /** The write asked (pending), the review page read and its approve button posted, the write resumed. */
  const cycle = async (): Promise<CycleSteps & { readonly id: string }> => {
    const args = nextArgs()
    const asked = await call(toolCall(mcpUrl, token, "ops__echo", args))
    const pending = structured(asked.result)
    if (pending["state"] !== "pending" || typeof pending["approval_id"] !== "string") {
      throw new Error(`the write did not answer pending: ${JSON.stringify(asked.result).slice(0, 300)}`)
    }
    const id = pending["approval_id"]
    const page = await sendTimed(browser, "GET", `${origin}/sso/approvals/${id}`, { cookie })
    const csrf = formField(page.body, "csrf")
    const intent = formField(page.body, "intent")
    if (page.status !== 200 || csrf === undefined || intent === undefined) {
      throw new Error(`review page answered ${page.status} without its form: ${page.body.slice(0, 300)}`)
    }
    const approve = await sendTimed(
      browser,
      "POST",
      `${origin}/sso/approvals/${id}/approve`,
      { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
      new URLSearchParams({ csrf, intent }).toString()
    )
    if (approve.status !== 303) throw new Error(`approve answered ${approve.status}: ${approve.body.slice(0, 300)}`)
    const resumed = await call(toolCall(mcpUrl, token, "gateway_resume_approval", { approval_id: id }))
    const text = (resumed.result["content"] as ReadonlyArray<{ readonly text?: string }> | undefined)?.[0]?.text
    if (resumed.result["isError"] === true || text !== args.text) {
      throw new Error(`resume did not execute the write: ${JSON.stringify(resumed.result).slice(0, 300)}`)
    }
    return {
      id,
      ask: asked.ms,
      page: page.ms,
      approve: approve.ms,
      resume: resumed.ms,
      total: asked.ms + page.ms + approve.ms + resumed.ms
    }
  }
  const plainWrite = async () => {
    const args = nextArgs()
    const done = await call(toolCall(mcpUrl, token, "plain__echo", args))
    const text = (done.result["content"] as ReadonlyArray<{ readonly text?: string }> | undefined)?.[0]?.text
    if (text !== args.text) throw new Error(`plain write answered ${JSON.stringify(done.result).slice(0, 300)}`)
    return done.ms
  }

  try {
    let lastId = ""
    for (let n = 0; n < WARMUP_CYCLES; n++) {
      lastId = (await cycle()).id
      await plainWrite()
    }
    const cycles: Array<CycleSteps> = []
    const plainWrites: Array<number> = []
    for (let round = 0; round < CYCLE_ROUNDS; round++) {
      for (const at of roundOrder(2, round)) {
        for (let n = 0; n < CYCLE_BLOCK; n++) {
          if (at === 0) {
            const done = await cycle()
            lastId = done.id
            cycles.push(done)
          } else {
            plainWrites.push(await plainWrite())
          }
        }
      }
    }

    // Status: a request left pending (what an agent polls while it waits) and the last completed one.
    const waiting = structured((await call(toolCall(mcpUrl, token, "ops__echo", nextArgs()))).result)
    const statusOf = (id: unknown) => toolCall(mcpUrl, token, "gateway_approval_status", { approval_id: id })
    const checks: ReadonlyArray<readonly [unknown, string]> = [
      [waiting["approval_id"], "pending"],
      [lastId, "completed"]
    ]
    for (const [id, state] of checks) {
      const answer = structured((await call(statusOf(id))).result)
      if (answer["state"] !== state || (state === "completed" && answer["result"] === null)) {
        throw new Error(`status of ${String(id)} answered ${JSON.stringify(answer).slice(0, 300)}`)
      }
    }
    mcp.destroy()
    progress(`${kind}: ${cycles.length} cycles and as many plain writes`)
    const [statusPending, readCall] = await interleavedLatencies(
      [statusOf(waiting["approval_id"]), toolCall(mcpUrl, token, "reader__echo", { text: "bench" })],
      { warmup: STATUS_WARMUP, rounds: STATUS_ROUNDS, block: STATUS_BLOCK }
    )
    const [statusCompleted, list] = await interleavedLatencies([statusOf(lastId), toolsList(mcpUrl, token)], {
      warmup: STATUS_WARMUP,
      rounds: SIDE_ROUNDS,
      block: STATUS_BLOCK
    })
    progress(`${kind}: status calls`)
    return {
      cycles,
      plainWrites,
      statusPending: statusPending ?? [],
      statusCompleted: statusCompleted ?? [],
      readCall: readCall ?? [],
      list: list ?? []
    }
  } finally {
    mcp.destroy()
    browser.destroy()
  }
}

const gatewayRows = (store: string, figures: GatewayFigures): ReadonlyArray<Row> => {
  const { cycles, plainWrites } = figures
  const cycleMs = mean(cycles.map((each) => each.total))
  const plainMs = mean(plainWrites)
  const plainP50 = percentile(plainWrites, 50)
  const step = (label: string, pick: (steps: CycleSteps) => number): Row => {
    const p50 = percentile(cycles.map(pick), 50)
    return [`${store}: · ${label}, p50`, formatMs(p50), formatMs(plainP50), formatTimes(p50, plainP50), "—", "—"]
  }
  const readP50 = percentile(figures.readCall, 50)
  const readP99 = percentile(figures.readCall, 99)
  const latency = (label: string, samples: ReadonlyArray<number>): ReadonlyArray<Row> => {
    const p50 = percentile(samples, 50)
    const p99 = percentile(samples, 99)
    return [
      [`${store}: ${label}, p50`, formatMs(p50), formatMs(readP50), formatTimes(p50, readP50), "—", "—"],
      [`${store}: ${label}, p99`, formatMs(p99), formatMs(readP99), formatTimes(p99, readP99), "—", "—"]
    ]
  }
  return [
    [
      `${store}: whole cycle, c=1 (cycles/s; mean)`,
      `${rate(cycleMs)} (${formatMs(cycleMs)})`,
      `${rate(plainMs)} (${formatMs(plainMs)})`,
      formatTimes(cycleMs, plainMs),
      "—",
      "—"
    ],
    step("write answered pending (tools/call)", (steps) => steps.ask),
    step("review page (GET)", (steps) => steps.page),
    step("approve (POST, cookie + anti-CSRF)", (steps) => steps.approve),
    step("gateway_resume_approval (executes the write)", (steps) => steps.resume),
    ...latency("gateway_approval_status of a pending approval", figures.statusPending),
    ...latency("gateway_approval_status of a completed one (cached result)", figures.statusCompleted),
    [
      `${store}: tools/list (no backend round trip), p50`,
      formatMs(percentile(figures.list, 50)),
      formatMs(readP50),
      formatTimes(percentile(figures.list, 50), readP50),
      "—",
      "—"
    ]
  ]
}

// ——— 3: store size per finished approval and per tombstone (SQLite, in process) ———

const ISSUER = "https://gateway.example.com/sso"

/** A finished approval as the service leaves it: sealed intent, one vote, completed with a small sealed result. */
const finishedApproval = (sealer: SealerApi, subject: string, n: number, at: Date) => {
  const id = `apr_${randomBytes(16).toString("base64url")}`
  const args = { operation_id: `deploy-${n}`, environment: "staging", version: `1.${n % 100}.${n % 7}` }
  const intent: Intent = { arguments: args, metadata: { backend: "ops", tool: "deploy", client_id: "claude-code" } }
  // intentHash(intent) is the SHA-256 of this same text; computed once.
  const text = intentText(intent)
  const result = {
    content: [{ type: "text", text: `deployed ${args.version} to staging` }],
    structuredContent: { deployed: args.version, environment: "staging" },
    isError: false
  }
  return {
    id,
    operationKey: operationKey({
      issuer: ISSUER,
      subject,
      backend: "ops",
      tool: "deploy",
      operationId: args.operation_id
    }),
    intentSealed: sealer.seal(text, `approval_intent:${id}`),
    intentHash: sha256Hex(text),
    resultSealed: sealer.seal(JSON.stringify(result), `approval_result:${id}`),
    at
  }
}

type Finished = ReturnType<typeof finishedApproval>

const SOURCE_HASH = randomBytes(32).toString("hex")
const REVIEWER = randomUUID()

const newApprovalOf = (row: Finished, subject: string) => ({
  id: row.id,
  operationKey: row.operationKey,
  issuer: ISSUER,
  subject,
  requesterId: subject,
  clientId: "claude-code",
  backend: "ops",
  tool: "deploy",
  exposedName: "ops__deploy",
  sourceHash: SOURCE_HASH,
  intentSealed: row.intentSealed,
  intentHash: row.intentHash,
  requiredApprovals: 1 as const,
  requireStepUp: false,
  approvers: [],
  risk: "base",
  createdAt: row.at,
  expiresAt: new Date(row.at.getTime() + 86_400_000)
})

interface StoreFigures {
  readonly emptyBytes: number
  readonly writtenBytes: number
  readonly finishedBytes: number
  readonly tombstoneBytes: number
  readonly unvacuumedBytes: number
  readonly payloadPerFinished: number
  readonly payloadPerTombstone: number
  readonly repositoryPayload: number
  readonly bulkPayload: number
  readonly repositoryUs: number
  readonly purgeMs: number
  readonly tombstones: number
  readonly objects: Readonly<Record<string, number>>
  readonly tombstoneObjects: Readonly<Record<string, number>>
  readonly tombstoneWrittenObjects: Readonly<Record<string, number>>
  readonly sweeps: ReadonlyArray<{ readonly due: number; readonly ms: number; readonly dropped: number }>
}

const measureStore = async (): Promise<StoreFigures> => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-bench-approvals-"))
  const file = join(dir, "gateway.db")
  const scope = Effect.runSync(Scope.make())
  try {
    const document = {
      server: { listen: "127.0.0.1:1", public_url: "http://127.0.0.1:1/mcp" },
      auth: { issuer: "http://127.0.0.1:1/sso" },
      storage: { type: "sqlite", path: file },
      log_level: "error"
    }
    const parsed = parseConfig(join(dir, "gateway.yaml"), stringify(document), {})
    if (Either.isLeft(parsed)) throw new Error(parsed.left.message)
    const config: GatewayConfig = parsed.right.config
    const key = Effect.runSync(parseConfigKey(randomBytes(32).toString("base64")))
    const quiet = Logger.withMinimumLogLevel(LogLevel.Error)
    const base = await Effect.runPromise(Scope.extend(Layer.build(baseLayer(config, key)), scope).pipe(quiet))
    const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof baseLayer>>>) =>
      Effect.runPromise(Effect.provide(effect, base).pipe(quiet))
    return await run(storeFigures(config, file))
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(dir, { recursive: true, force: true })
  }
}

const storeFigures = (config: GatewayConfig, file: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* ApprovalRepo
    const sealer = yield* Sealer
    const approvals = yield* Approvals
    const subject = randomUUID()
    let n = 0

    /** The file as it stands once the WAL is folded in (and, with `vacuum`, rewritten without free pages). */
    const fileBytes = (vacuum: boolean) =>
      Effect.gen(function* () {
        yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
        if (vacuum) {
          yield* sql`VACUUM`
          yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
        }
        return statSync(file).size
      })
    /** Bytes of each table and index of `names` (SQLite's dbstat), after VACUUM. */
    const objects = (prefix: string) =>
      Effect.map(
        sql<{ readonly name: string; readonly bytes: number }>`SELECT name, SUM(pgsize) AS bytes FROM dbstat
          WHERE name LIKE ${`%${prefix}%`} GROUP BY name ORDER BY name`,
        (rows) => Object.fromEntries(rows.map((row) => [row.name, Number(row.bytes)]))
      )
    /** The bytes of the values themselves: every column's length, summed (`where` narrows the rows). */
    const payload = (table: string, where = "") =>
      Effect.gen(function* () {
        const columns = yield* sql<{ readonly name: string }>`SELECT name FROM pragma_table_info(${table})`
        const sum = columns.map((column) => `COALESCE(LENGTH("${column.name}"), 0)`).join(" + ")
        const [row] = yield* sql.unsafe<{ readonly bytes: number | null }>(
          `SELECT SUM(${sum}) AS bytes FROM ${table} ${where}`
        )
        return Number(row?.bytes ?? 0)
      })
    const count = (table: string) =>
      Effect.map(sql.unsafe<{ readonly n: number }>(`SELECT COUNT(*) AS n FROM ${table}`), (rows) => rows[0]?.n ?? 0)

    /** `howMany` completed approvals as multi-row INSERTs (INSERT_BATCH rows a statement). */
    const written = (howMany: number) =>
      Effect.gen(function* () {
        for (let done = 0; done < howMany; done += INSERT_BATCH) {
          const at = new Date(yield* Clock.currentTimeMillis)
          const stamp = at.toISOString()
          const made = Array.from({ length: Math.min(INSERT_BATCH, howMany - done) }, () =>
            finishedApproval(sealer, subject, n++, at)
          )
          const rows = made.map((row) => ({
            id: row.id,
            operation_key: row.operationKey,
            issuer: ISSUER,
            subject,
            client_id: "claude-code",
            backend: "ops",
            tool: "deploy",
            exposed_name: "ops__deploy",
            source_hash: SOURCE_HASH,
            intent_sealed: row.intentSealed,
            intent_hash: row.intentHash,
            required_approvals: 1,
            require_step_up: 0,
            approvers: "[]",
            risk: "base",
            state: "completed",
            created_at: stamp,
            expires_at: new Date(at.getTime() + 86_400_000).toISOString(),
            approved_at: stamp,
            execute_by: new Date(at.getTime() + 3_600_000).toISOString(),
            finished_at: stamp,
            decided_by: null,
            result_sealed: row.resultSealed,
            revision: 5
          }))
          const votes = made.map((row) => ({
            approval_id: row.id,
            reviewer_id: REVIEWER,
            reviewer_name: "Dana Reviewer",
            step_up_acr: null,
            step_up_at: null,
            voted_at: stamp
          }))
          yield* sql`INSERT INTO approvals ${sql.insert(rows)}`
          yield* sql`INSERT INTO approval_votes ${sql.insert(votes)}`
        }
      })
    /** `howMany` completed approvals in the columns the repository writes: one transaction per BULK_TRANSACTION. */
    const bulk = (howMany: number) =>
      Effect.gen(function* () {
        for (let done = 0; done < howMany; done += BULK_TRANSACTION) {
          yield* sql.withTransaction(written(Math.min(BULK_TRANSACTION, howMany - done)))
        }
      })

    const emptyBytes = yield* fileBytes(true)

    // VIA_REPOSITORY through the repository's own lifecycle (create, vote, claim, finish), as the service drives it.
    const viaRepository: Array<string> = []
    const started = performance.now()
    for (let done = 0; done < VIA_REPOSITORY; done++) {
      const at = new Date(yield* Clock.currentTimeMillis)
      const row = finishedApproval(sealer, subject, n++, at)
      const created = yield* repo.create(newApprovalOf(row, subject), 20)
      if (created._tag !== "Created") throw new Error(`create answered ${created._tag}`)
      const vote = { reviewerId: REVIEWER, reviewerName: "Dana Reviewer", stepUpAcr: undefined, stepUpAt: undefined }
      yield* repo.vote(row.id, vote, at, new Date(at.getTime() + 3_600_000))
      yield* repo.claim(row.id, at)
      yield* repo.finish(row.id, ["executing"], "completed", at, { resultSealed: row.resultSealed })
      viaRepository.push(row.id)
    }
    const repositoryUs = ((performance.now() - started) * 1000) / VIA_REPOSITORY
    yield* Effect.sync(() => progress(`${VIA_REPOSITORY} approvals through the repository`))
    yield* bulk(FINISHED - VIA_REPOSITORY)
    if ((yield* count("approvals")) !== FINISHED) throw new Error("the finished approvals were not all written")
    yield* Effect.sync(() => progress(`${FINISHED - VIA_REPOSITORY} more written`))

    const writtenBytes = yield* fileBytes(false)
    const finishedBytes = yield* fileBytes(true)
    yield* Effect.sync(() => progress("VACUUM"))
    const finishedObjects = yield* objects("approval")
    const mine = `WHERE id IN (${viaRepository.map((id) => `'${id}'`).join(",")})`
    const repositoryPayload = (yield* payload("approvals", mine)) / VIA_REPOSITORY
    const allPayload = yield* payload("approvals")
    const bulkPayload = (allPayload - repositoryPayload * VIA_REPOSITORY) / (FINISHED - VIA_REPOSITORY)
    const payloadPerFinished = (allPayload + (yield* payload("approval_votes"))) / FINISHED

    // Retention passed: a day past it, every finished approval goes and leaves its tombstone.
    const before = new Date((yield* Clock.currentTimeMillis) + 86_400_000)
    const purgeStarted = performance.now()
    for (;;) {
      const dropped = yield* repo.purge(before, PURGE_BATCH)
      if (dropped < PURGE_BATCH) break
    }
    const purgeMs = performance.now() - purgeStarted
    yield* Effect.sync(() => progress("retention (purge)"))
    const tombstones = yield* count("approval_tombstones")
    if (tombstones !== FINISHED || (yield* count("approvals")) !== 0) {
      throw new Error(`retention left ${tombstones} tombstones and ${yield* count("approvals")} approvals`)
    }
    const unvacuumedBytes = yield* fileBytes(false)
    const tombstoneWrittenObjects = yield* objects("tombstone")
    const tombstoneBytes = yield* fileBytes(true)
    const tombstoneObjects = yield* objects("tombstone")
    const payloadPerTombstone = (yield* payload("approval_tombstones")) / tombstones
    yield* Effect.sync(() => progress("VACUUM"))

    // The maintenance tick's sweep as it runs in production (batches of 500), on two backlogs of due approvals.
    const settings = approvalSettingsOf(config)
    const later = shiftedClock()
    later.advance(Duration.toMillis(config.approvals.retention) + 86_400_000)
    const sweeps: Array<{ readonly due: number; readonly ms: number; readonly dropped: number }> = []
    for (const due of SWEEP_BACKLOGS) {
      yield* bulk(due)
      const sweepStarted = performance.now()
      const swept = yield* approvals.sweep(settings).pipe(Effect.withClock(later.clock))
      if (swept.dropped !== due) throw new Error(`the sweep dropped ${swept.dropped} of ${due} due approvals`)
      sweeps.push({ due, ms: performance.now() - sweepStarted, dropped: swept.dropped })
      yield* Effect.sync(() => progress(`sweep of ${due}`))
    }

    return {
      emptyBytes,
      writtenBytes,
      finishedBytes,
      tombstoneBytes,
      unvacuumedBytes,
      payloadPerFinished,
      payloadPerTombstone,
      repositoryPayload,
      bulkPayload,
      repositoryUs,
      purgeMs,
      tombstones,
      objects: finishedObjects,
      tombstoneObjects,
      tombstoneWrittenObjects,
      sweeps
    } satisfies StoreFigures
  })

const storeRows = (figures: StoreFigures): ReadonlyArray<Row> => {
  const perFinished = (figures.finishedBytes - figures.emptyBytes) / FINISHED
  const perTombstone = (figures.tombstoneBytes - figures.emptyBytes) / FINISHED
  const [small, large] = figures.sweeps
  const sweepRow = (
    sweep: (typeof figures.sweeps)[number],
    baseline: (typeof figures.sweeps)[number] | undefined
  ): Row => {
    const perRow = sweep.ms / sweep.due
    return [
      `SQLite: retention sweep, ${formatCount(sweep.due)} due (maintenance tick, batches of 500): per approval`,
      `${formatMs(perRow)} (${formatMs(sweep.ms)} in all)`,
      baseline === undefined ? "—" : `${formatMs(baseline.ms / baseline.due)} at ${formatCount(baseline.due)} due`,
      baseline === undefined ? "—" : formatTimes(perRow, baseline.ms / baseline.due),
      "—",
      "—"
    ]
  }
  const total = (objects: Readonly<Record<string, number>>) => Object.values(objects).reduce((sum, n) => sum + n, 0)
  const tombstoneWritten = total(figures.tombstoneWrittenObjects) / FINISHED
  const written = (figures.writtenBytes - figures.emptyBytes) / FINISHED
  /** Bytes on disk against the bytes of values they hold, with the tombstone target where one applies. */
  const sizeRow = (label: string, bytes: number, payload: number, target?: number): Row => [
    label,
    formatBytes(bytes),
    `${formatBytes(payload)} of values`,
    formatTimes(bytes, payload),
    target === undefined ? "—" : `≤ ${target} B`,
    target === undefined ? "—" : verdict(bytes <= target)
  ]
  return [
    sizeRow(
      `SQLite: file growth per finished approval as written (details, 1 vote, sealed result; ${formatCount(FINISHED)})`,
      written,
      figures.payloadPerFinished
    ),
    sizeRow("SQLite: the same after VACUUM", perFinished, figures.payloadPerFinished),
    sizeRow(
      "SQLite: file size per tombstone after retention (VACUUM)",
      perTombstone,
      figures.payloadPerTombstone,
      TOMBSTONE_TARGET_BYTES
    ),
    sizeRow(
      "SQLite: tombstone table and key index as written (dbstat, before VACUUM)",
      tombstoneWritten,
      figures.payloadPerTombstone,
      TOMBSTONE_TARGET_BYTES
    ),
    [
      "SQLite: file after retention, before VACUUM",
      formatBytes(figures.unvacuumedBytes),
      `${formatBytes(figures.finishedBytes)} before (VACUUM)`,
      formatTimes(figures.unvacuumedBytes, figures.finishedBytes),
      "—",
      "—"
    ],
    ...(small === undefined ? [] : [sweepRow(small, undefined)]),
    ...(large === undefined ? [] : [sweepRow(large, small)])
  ]
}

export const run = async (): Promise<Table> => {
  const entry = await ensureBuilt()
  phaseStarted = performance.now()
  const ports = [await freePort(), await freePort(), await freePort()] as const
  const backends = await startMcpBackends(ports, 0)
  let sqlite: GatewayFigures
  let postgres: GatewayFigures
  try {
    sqlite = await measureGateway(entry, "sqlite", ports)
    postgres = await measureGateway(entry, "postgres", ports)
  } finally {
    await backends.stop()
  }
  const store = await measureStore()
  const perOperation = (bytes: number) => formatCount(bytes / FINISHED)
  const objectsNote = (objects: Readonly<Record<string, number>>) =>
    Object.entries(objects)
      .filter(([, bytes]) => bytes > 4096)
      .map(([object, bytes]) => `${object} ${perOperation(bytes)} B`)
      .join(", ")
  const cycles = sqlite.cycles.length
  return {
    title: `Write approvals: pending → approved → completed over /mcp and the review page (${cycles} cycles per store after ${WARMUP_CYCLES} warm-up), status latency, store size (${formatCount(FINISHED)} finished)`,
    columns: ["measure", "approvals", "baseline", "ratio", "target", "verdict"],
    rows: [...gatewayRows("SQLite", sqlite), ...gatewayRows("PostgreSQL", postgres), ...storeRows(store)],
    notes: [
      "Cycle: spawned gateway (`node dist/main.js serve --dev`, token from `gateway dev-token`) in front of the bench MCP backend's `echo`, exposed as `ops__echo` (write, approval rule with an operation id, one reviewer), `plain__echo` (the same write, no approval rule) and `reader__echo` (read). One cycle = `tools/call ops__echo` (answered pending) → the reviewer's browser reads `/sso/approvals/{id}` and posts its approve form (session cookie, the page's anti-CSRF token and intent; the 303 is not followed) → `tools/call gateway_resume_approval` (the write reaches the backend). c=1 over keep-alive connections, timed with `process.hrtime`; cycles interleaved (ABBA, blocks of " +
        `${CYCLE_BLOCK}) with as many \`plain__echo\` calls, the baseline: ratio = what an approval costs the gateway besides the human wait. Steps are compared with the plain write's p50.`,
      `Status: \`gateway_approval_status\` without \`query_upstream\`; of the pending approval ${formatCount(STATUS_BLOCK * STATUS_ROUNDS)} calls interleaved (blocks of ${STATUS_BLOCK}, after ${STATUS_WARMUP} warm-up) with as many read-only \`reader__echo\` calls through the same gateway (a backend round trip: the baseline); of the completed one ${formatCount(STATUS_BLOCK * SIDE_ROUNDS)} interleaved with \`tools/list\` (the gateway without the backend), compared with the same baseline.`,
      `Store size: in process on a fresh SQLite file (production base layer). ${formatCount(VIA_REPOSITORY)} approvals went through \`ApprovalRepo\` create → vote → claim → finish (${formatCount(store.repositoryUs)} µs each), the other ${formatCount(FINISHED - VIA_REPOSITORY)} were written as multi-row INSERTs of the same columns (sealed intent and result from the real Sealer, one vote each; ${formatCount(INSERT_BATCH)} rows a statement, ${formatCount(BULK_TRANSACTION)} a transaction); values per row: ${formatCount(store.repositoryPayload)} B through the repository, ${formatCount(store.bulkPayload)} B bulk. Sizes are the file after \`wal_checkpoint(TRUNCATE)\` (and VACUUM where said), less the empty store's ${formatBytes(store.emptyBytes)}; "values" is the sum of every column's length (the baseline: ratio = storage overhead).`,
      `Per finished approval by table and index (dbstat, after VACUUM): ${objectsNote(store.objects)}. Per tombstone: ${objectsNote(store.tombstoneObjects)} after VACUUM; ${objectsNote(store.tombstoneWrittenObjects)} as written.`,
      `Retention: \`ApprovalRepo.purge\` a day past \`approvals.retention\`, ${formatCount(PURGE_BATCH)} per call (${formatMs(store.purgeMs)} for ${formatCount(store.tombstones)}). The maintenance tick's own sweep (\`Approvals.sweep\`, 500 per batch, clock moved past retention) is timed on two backlogs of due approvals written after those tombstones; the ratio compares the cost per approval (1.0× = linear).`
    ]
  }
}
