import { Clock, Context, Duration, Effect, Layer, Redacted } from "effect"
import { readCaBundle } from "../../bearer/external-jwks-fetch.js"
import type { GatewayConfig } from "../../config/schema.js"
import { ApprovalEventRepo } from "../../store/approval-events.js"
import { ArchiveRepo, type NewArchiveEntry } from "../../store/archive-entries.js"
import { storeFailureOr } from "../../store/health.js"
import { deliveryAgent } from "../delivery-agent.js"
import { ArchiveDelivery } from "../delivery-status.js"
import { securityEvent } from "../security-log.js"
import { entryOfEvent, isArchived } from "./entry-of-event.js"
import { envelopeKeyId, GENESIS_HASH, serializeEntry } from "./format.js"
import { type ShipOutcome, shipEnvelope } from "./ship.js"
import { type ArchiveSigningKey, parseArchiveSigningKey, sealEntry } from "./signing-key.js"

/**
 * The audit archive (docs/audit-archive.md): seals each approval event of the outbox, in `seq` order,
 * into the next signed entry of the chain, and ships the entries to the receiver strictly in order,
 * one at a time: an entry not acknowledged with its receipt is retried (5 s, doubling, at most 1 h,
 * the next attempt stored), and every later entry waits behind it.
 */

export interface ArchiveSettings {
  readonly url: string
  readonly keyId: string
  readonly key: ArchiveSigningKey
  /** PEM certificates trusted instead of the system roots (`ca_file`). */
  readonly ca: string | undefined
}

/** The archive's settings; undefined when `admin.approvals.audit_archive` is not set. */
export class ArchiveSettingsTag extends Context.Tag("gateway/ArchiveSettings")<
  ArchiveSettingsTag,
  ArchiveSettings | undefined
>() {}

export const archiveSettingsLayer = (config: GatewayConfig) =>
  Layer.effect(
    ArchiveSettingsTag,
    Effect.gen(function* () {
      const archive = config.admin.approvals.audit_archive
      if (archive === undefined) return undefined
      const key = parseArchiveSigningKey(Redacted.value(archive.signing_key))
      // The configuration rule refused such a key already; a defect here, never the key's bytes.
      if (typeof key === "string") return yield* Effect.dieMessage(`admin.approvals.audit_archive.signing_key: ${key}`)
      const ca =
        archive.ca_file === undefined
          ? undefined
          : yield* readCaBundle(archive.ca_file, "admin.approvals.audit_archive.ca_file")
      return { url: archive.url, keyId: archive.key_id, key, ca } satisfies ArchiveSettings
    })
  )

/** Retry delays: 5 s after the first failure, doubling, at most an hour. */
export const retryDelayMs = (attempts: number): number =>
  Math.min(3_600_000, 5_000 * 2 ** Math.min(20, Math.max(0, attempts - 1)))

/** Events sealed per transaction. */
const SEAL_BATCH = 500

/** What `GET /api/v1/approvals/delivery` shows of the archive. */
export interface ArchiveReport {
  readonly enabled: boolean
  readonly pending: number
  readonly failed: number
  readonly oldest_pending_age_seconds: number | null
  readonly last_error: string | null
}

export class Archive extends Effect.Service<Archive>()("gateway/Archive", {
  scoped: Effect.gen(function* () {
    const settings = yield* ArchiveSettingsTag
    // The one connection to the receiver, kept alive between entries; closed with the service.
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => deliveryAgent(settings?.ca)),
      (made) => Effect.sync(() => made.destroy())
    )
    const repo = yield* ArchiveRepo
    const events = yield* ApprovalEventRepo
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    // The failure class last logged ("" while deliveries succeed): one line per change, not per attempt.
    let logged = ""

    /**
     * Seals the next batch of outbox events not yet taken in: whether more may wait. One batch per pass,
     * so that shipping is never starved: while approvals keep writing events faster than a loop of
     * batches could catch up with, sealing alone would hold the worker and nothing would ship.
     */
    const seal = Effect.fn("Archive.seal")(function* (archive: ArchiveSettings) {
      const position = yield* repo.position()
      const batch = yield* events.after(position.eventSeq, SEAL_BATCH)
      const last = batch.at(-1)
      if (last === undefined) return false
      let sequence = position.last?.sequence ?? 0
      let previous = position.last?.hash ?? GENESIS_HASH
      const entries: Array<NewArchiveEntry> = []
      for (const event of batch.filter(isArchived)) {
        sequence += 1
        const sealed = sealEntry(archive.key, serializeEntry(entryOfEvent(event, sequence, previous, archive.keyId)))
        entries.push({
          sequence,
          eventSeq: event.seq,
          approvalId: event.approval_id,
          hash: sealed.hash,
          envelope: sealed.line
        })
        previous = sealed.hash
      }
      const appended = yield* repo.append(position.eventSeq, last.seq, entries, yield* now).pipe(
        Effect.as(true),
        // Another process sealed these first: its entries stand, and this one stops for this pass.
        Effect.catchTag("ArchiveRaced", () => Effect.succeed(false))
      )
      // The first entry signed with a new key: where the old key's range ends, for `verify-audit --key
      // <ID>=<KEY>@<FIRST>-<LAST>` (docs/audit-archive.md, "Rotating the key").
      // Read off the last stored entry only when something was sealed: not on every idle pass.
      const first = entries[0]
      const before =
        appended && first !== undefined && position.last !== undefined
          ? envelopeKeyId(position.last.envelope)
          : undefined
      if (first !== undefined && before !== undefined && before !== archive.keyId) {
        yield* securityEvent("approval.archive_key_changed", {
          key_id: archive.keyId,
          previous_key_id: before,
          first_sequence: first.sequence
        })
      }
      return appended && batch.length === SEAL_BATCH
    })

    const logOutcome = (sequence: number, attempts: number, outcome: ShipOutcome, retryInMs: number) => {
      const errorClass = outcome._tag === "Failed" ? outcome.errorClass : ""
      if (errorClass === logged) return Effect.void
      const before = logged
      logged = errorClass
      return errorClass === ""
        ? securityEvent("approval.archive_recovered", { sequence, failed_as: before })
        : securityEvent("approval.archive_failed", {
            sequence,
            attempts,
            error: errorClass,
            retry_in_seconds: Math.round(retryInMs / 1000),
            // A receiver that holds this sequence already answers 409: after a restore, the database's
            // chain and the receiver's part at the backup point (docs/audit-archive.md).
            ...(errorClass === "http_409" ? { hint: conflictHint } : {})
          })
    }

    /**
     * Ships due entries in order until one fails or none is due. Returns when the next one is due (ms
     * from now), or undefined when nothing waits.
     */
    const ship = Effect.fn("Archive.ship")(function* (archive: ArchiveSettings) {
      for (;;) {
        const entry = yield* repo.nextUnacknowledged()
        if (entry === undefined) return undefined
        const at = yield* now
        const wait = entry.next_attempt_at.getTime() - at.getTime()
        if (wait > 0) return wait
        const outcome = yield* shipEnvelope(archive.url, entry.envelope, entry.sequence, entry.hash, agent)
        if (outcome._tag === "Acknowledged") {
          yield* repo.acknowledge(entry.sequence, yield* now)
          yield* logOutcome(entry.sequence, entry.attempts + 1, outcome, 0)
          continue
        }
        const attempts = entry.attempts + 1
        const delay = retryDelayMs(attempts)
        yield* repo.failed(entry.sequence, attempts, new Date((yield* now).getTime() + delay), outcome.errorClass)
        yield* logOutcome(entry.sequence, attempts, outcome, delay)
        return delay
      }
    })

    /** One pass: seal what is new, ship what is due. Returns ms until the next entry is due, if any. */
    const step = Effect.fn("Archive.step")(function* () {
      if (settings === undefined) return undefined
      const more = yield* seal(settings)
      const due = yield* ship(settings)
      // More events wait to be sealed: the next pass starts at once, unless an entry's retry is due later.
      return more && due === undefined ? 0 : due
    })

    const report = Effect.fn("Archive.report")(function* () {
      if (settings === undefined) {
        return { enabled: false, pending: 0, failed: 0, oldest_pending_age_seconds: null, last_error: null }
      }
      const counts = yield* repo.counts()
      const at = yield* now
      return {
        enabled: true,
        pending: counts.pending,
        failed: counts.failed,
        oldest_pending_age_seconds:
          counts.oldestSealedAt === null
            ? null
            : Math.max(0, Math.floor((at.getTime() - counts.oldestSealedAt.getTime()) / 1000)),
        last_error: counts.lastError
      } satisfies ArchiveReport
    })

    return { enabled: settings !== undefined, step, report } as const
  })
}) {}

const conflictHint =
  'the receiver refused the entry as conflicting with its chain; after a database restore, compare both ends (docs/audit-archive.md, "After restoring a backup")'

/** How often the worker looks for new events when nothing is due sooner. */
export const ARCHIVE_POLL = Duration.seconds(1)

/**
 * The shipping worker: one fiber for the life of the layer, passing every second or when the next
 * retry is due, whichever is sooner. A pass that fails is tried again at the next: for lack of the
 * store it counts in the store's outage (src/store/health.ts), anything else is logged with its cause.
 */
export const ArchiveWorker = Layer.scopedDiscard(
  Effect.gen(function* () {
    const archive = yield* Archive
    if (!archive.enabled) return
    const pass = archive.step().pipe(
      Effect.catchAllCause((cause) =>
        storeFailureOr(
          cause,
          Effect.logWarning("archive.worker_failed", cause).pipe(
            Effect.annotateLogs({ event: "archive.worker_failed" })
          )
        ).pipe(Effect.as(undefined as number | undefined))
      ),
      Effect.flatMap((dueInMs) =>
        Effect.sleep(Duration.min(ARCHIVE_POLL, Duration.millis(Math.max(0, dueInMs ?? Number.POSITIVE_INFINITY))))
      )
    )
    yield* Effect.forkScoped(Effect.forever(pass))
  })
)

/** The archive's part of `GET /api/v1/approvals/delivery` (src/events/delivery-status.ts). */
export const ArchiveDeliveryLive = Layer.effect(
  ArchiveDelivery,
  Effect.map(Archive, (archive) => ({ report: archive.report() }))
)
