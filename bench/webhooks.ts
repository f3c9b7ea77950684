import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Logger, LogLevel, Redacted, Scope } from "effect"
import { Approvals } from "../src/approvals/service.js"
import { Archive, ArchiveSettingsTag, ArchiveWorker } from "../src/events/archive/service.js"
import { notifierLayer } from "../src/events/notifier.js"
import { httpsTransport } from "../src/events/webhook-transport.js"
import { appendApprovalEvents } from "../src/store/approval-events.js"
import type { ApprovalRow } from "../src/store/approvals.js"
import { ArchiveRepo } from "../src/store/archive-entries.js"
import { NotificationDeliveryRepo } from "../src/store/notification-deliveries.js"
import {
  approvalLayerOn,
  approveAs,
  claimedOf,
  deployArgs,
  newPeople,
  pendingOf,
  requestWrite
} from "../test/support/approval-service.js"
import { newArchiveKey } from "../test/support/archive-file.js"
import { startArchiveReceiver } from "../test/support/archive-receiver.js"
import { randomConfigKey, withStorage, withTempDir } from "../test/support/databases.js"
import { makeTestCa } from "../test/support/test-ca.js"
import { startWebhookReceiver } from "../test/support/webhook-receiver.js"
import { roundOrder } from "./support/mcp-measure.js"
import { formatCount, formatMs, formatTimes, type Table, verdict } from "./support/table.js"

export const name = "webhooks"

/** Events in the backlog a receiver that comes back must drain, in order. */
const BACKLOG = 100_000
/** Rows per INSERT: 12 parameters a row stays under SQLite's 32,766 per statement. */
const BACKLOG_TRANSACTION = 2_000
/** Approval cycles (request, approve, claim, complete: 5 events) per block; blocks alternate on/off (ABBA). */
// A block lasts more than the workers' idle poll (1 s), so they deliver and archive while it runs.
const CYCLE_BLOCK = 300
const CYCLE_ROUNDS = 4
const WARMUP = 10
const SECRET = "a-bench-webhook-secret-of-at-least-32-bytes"
const PUBLIC_URL = "https://gw.example.com/mcp"

const progress = (text: string) => process.stderr.write(`webhooks: ${text}\n`)
const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length

/** A realistic approval row for the backlog's events (the outbox keeps no reference to the row). */
const backlogRow = (n: number, at: Date): ApprovalRow => ({
  id: `apr_backlog_${n}`,
  operation_key: null,
  issuer: "https://gw.example.com/sso",
  subject: randomUUID(),
  requester_id: null,
  client_id: "cli",
  backend: "ops",
  tool: "deploy",
  exposed_name: "ops__deploy",
  source_hash: "s",
  intent_sealed: `v1.${randomUUID()}`,
  intent_hash: "0".repeat(64),
  required_approvals: 1,
  require_step_up: false,
  approvers: [],
  risk: "base",
  state: "pending",
  created_at: at,
  expires_at: new Date(at.getTime() + 3_600_000),
  approved_at: null,
  execute_by: null,
  finished_at: null,
  decided_by: null,
  result_sealed: null,
  revision: 1
})

export const run = async (): Promise<Table> => {
  const ca = makeTestCa()
  const receiver = await startWebhookReceiver({ ca, secret: SECRET })
  const scope = Effect.runSync(Scope.make())
  let archiveReceiverClose = async () => {}
  try {
    const storage = await Effect.runPromise(Scope.extend(withStorage("sqlite"), scope))
    const services = NotificationDeliveryRepo.Default.pipe(
      Layer.provideMerge(approvalLayerOn(storage, randomConfigKey()))
    )
    const base = await Effect.runPromise(Layer.buildWithScope(services, scope))
    type Services = Layer.Layer.Success<typeof services>
    const inBase = <A, E>(effect: Effect.Effect<A, E, Services>) =>
      Effect.runPromise(Effect.provide(effect, base).pipe(Logger.withMinimumLogLevel(LogLevel.Error)))
    const notifier = notifierLayer({ url: receiver.url, secret: Redacted.make(SECRET), publicUrl: PUBLIC_URL }).pipe(
      Layer.provide(httpsTransport(ca.caPem)),
      Layer.provide(Layer.succeedContext(base))
    )
    // The audit archive beside the webhooks in the cycle: sealing each event into the signed chain and
    // shipping it to a receiver that checks signature and chain.
    const archiveKey = newArchiveKey()
    const archiveDir = await Effect.runPromise(Scope.extend(withTempDir, scope))
    const archiveReceiver = await startArchiveReceiver(ca, `${archiveDir}/archive.jsonl`, {
      bench: archiveKey.publicKeyBase64
    })
    archiveReceiverClose = () => archiveReceiver.close()
    const archive = ArchiveWorker.pipe(
      Layer.provideMerge(Archive.Default),
      Layer.provide(ArchiveRepo.Default),
      Layer.provide(
        Layer.succeed(ArchiveSettingsTag, { url: archiveReceiver.url, keyId: "bench", key: archiveKey, ca: ca.caPem })
      ),
      Layer.provide(Layer.succeedContext(base))
    )
    const withArchive = Layer.merge(notifier, archive)
    /** Runs `body` with the delivery workers running (on) or not (off). */
    const withNotifier = async <A>(on: boolean, body: () => Promise<A>, workers: Layer.Layer<never> = notifier) => {
      if (!on) return body()
      const running = Effect.runSync(Scope.make())
      await Effect.runPromise(Layer.buildWithScope(workers, running).pipe(Logger.withMinimumLogLevel(LogLevel.Error)))
      try {
        return await body()
      } finally {
        await Effect.runPromise(Scope.close(running, Exit.void))
      }
    }

    // ——— The approvals cycle with webhooks on and off ———
    const people = await inBase(newPeople)
    const cycle = () =>
      inBase(
        Effect.gen(function* () {
          const started = performance.now()
          const approvals = yield* Approvals
          const pending = pendingOf(yield* requestWrite(people.requester.caller, deployArgs()))
          yield* approveAs(people.first, pending)
          const claimed = claimedOf(yield* approvals.claim(people.requester.caller, pending.id))
          yield* approvals.completed(claimed.row, { structuredContent: { ok: true } })
          return performance.now() - started
        })
      )
    for (let n = 0; n < WARMUP; n++) await cycle()
    const timings: [Array<number>, Array<number>] = [[], []]
    for (let round = 0; round < CYCLE_ROUNDS; round++) {
      for (const at of roundOrder(2, round)) {
        await withNotifier(
          at === 1,
          async () => {
            for (let n = 0; n < CYCLE_BLOCK; n++) {
              timings[at]!.push(await cycle())
              // Between two cycles the event loop turns, as it does between two requests that arrive over
              // the network: a loop of promises alone would keep every other fiber (the workers) waiting
              // for the one SQLite connection until the block ends.
              await new Promise((resolve) => setImmediate(resolve))
            }
          },
          withArchive
        )
      }
    }
    const [off, on] = timings.map(mean) as [number, number]
    const archived = archiveReceiver.refusals.length === 0 && archiveReceiver.last().sequence > 0
    progress(
      `archive: ${archiveReceiver.last().sequence} entries received, ${archiveReceiver.refusals.length} refused ${archiveReceiver.refusals.slice(0, 3).join("; ")}`
    )
    progress(`cycles: off ${formatMs(off)}, on ${formatMs(on)}`)

    // ——— A 100,000-event backlog drains once the receiver is back ———
    receiver.mode = "down"
    const drained = await withNotifier(true, async () => {
      const at = new Date()
      await inBase(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          for (let first = 0; first < BACKLOG; first += BACKLOG_TRANSACTION) {
            const changes = Array.from({ length: BACKLOG_TRANSACTION }, (_, index) => ({
              row: backlogRow(first + index, at),
              facts: { action: "requested" as const, actor: null }
            }))
            yield* sql.withTransaction(appendApprovalEvents(sql, changes, at)).pipe(Effect.orDie)
          }
        })
      )
      progress(`backlog of ${formatCount(BACKLOG)} written`)
      // Events of the last "off" block may still be queued ahead of the backlog: only the backlog counts.
      const backlog = () =>
        receiver.events().filter((one) => String(one.body["approval_id"]).startsWith("apr_backlog_"))
      receiver.mode = "accept"
      // The head's retry comes 5 s after its first failure: timed from the backlog's first acknowledgement.
      while (backlog().length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
      const started = performance.now()
      const startCount = backlog().length
      while (backlog().length < BACKLOG) await new Promise((resolve) => setTimeout(resolve, 50))
      const seconds = (performance.now() - started) / 1000
      const delivered = backlog().map((one) => String(one.body["approval_id"]))
      const inOrder = delivered.length === BACKLOG && delivered.every((id, index) => id === `apr_backlog_${index}`)
      return { rate: (BACKLOG - startCount) / seconds, inOrder, seconds }
    })
    progress(`backlog drained: ${formatCount(drained.rate)} events/s`)
    const ratio = on / off
    return {
      title: "Approval webhooks and the audit archive (SQLite, in-process, real HTTPS receivers)",
      columns: ["figure", "value", "against", "target", "verdict"],
      rows: [
        ["approvals cycle, webhooks and archive off", formatMs(off), "baseline", "", ""],
        [
          "approvals cycle, webhooks and archive on",
          formatMs(on),
          formatTimes(on, off),
          "≤ 1.15×",
          verdict(ratio <= 1.15 && archived)
        ],
        [
          `backlog of ${formatCount(BACKLOG)} drained`,
          `${formatCount(drained.rate)} events/s (${drained.seconds.toFixed(1)} s)`,
          drained.inOrder ? "in seq order" : "OUT OF ORDER",
          "in order",
          verdict(drained.inOrder)
        ]
      ],
      notes: [
        `A cycle is request, approve, claim and complete through the Approvals service (5 outbox events), ${CYCLE_ROUNDS * CYCLE_BLOCK} per side in blocks of ${CYCLE_BLOCK} alternating on/off (ABBA), after ${WARMUP} warm-up cycles; "on" runs the notifier's worker delivering them meanwhile to a local HTTPS receiver that verifies each signature, and the archive's worker sealing each event into the signed hash chain and shipping it to a local HTTPS archive receiver that checks signature and chain (the verdict also needs every entry it holds to pass the chain).`,
        "The backlog is written to the outbox while the receiver answers 503; the rate is counted from the first acknowledgement (after the head's 5 s retry) to the last, one kept-alive HTTPS connection, each event acknowledged in the database before the next is sent."
      ]
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await archiveReceiverClose()
    await receiver.close()
    ca.remove()
  }
}
