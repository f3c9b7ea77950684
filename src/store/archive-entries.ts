import { SqlClient } from "@effect/sql"
import { Data, Effect, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/**
 * The audit archive's entries (`archive_entries`, `archive_cursor`; docs/audit-archive.md): appended in
 * one transaction with the cursor, shipped lowest sequence first. The envelope is stored as the exact line
 * that was signed and is sent as is on every attempt: it is never rebuilt from its fields.
 */

const StoredInt = Schema.Union(Schema.Int, Schema.NumberFromString.pipe(Schema.int()))

export const ArchiveEntryRow = Schema.Struct({
  sequence: StoredInt,
  event_seq: StoredInt,
  approval_id: Schema.String,
  hash: Schema.String,
  envelope: Schema.String,
  sealed_at: StoredTimestamp,
  attempts: StoredInt,
  next_attempt_at: StoredTimestamp,
  last_error: Schema.NullOr(Schema.String)
})
export type ArchiveEntryRow = typeof ArchiveEntryRow.Type

/** One envelope to append, built by the caller from the chain's current end. */
export interface NewArchiveEntry {
  readonly sequence: number
  readonly eventSeq: number
  readonly approvalId: string
  readonly hash: string
  readonly envelope: string
}

/** Another writer appended first (a second process on the same database): nothing was written. */
/** A unique-key violation: PostgreSQL's SQLSTATE 23505, SQLite's SQLITE_CONSTRAINT_UNIQUE or _PRIMARYKEY. */
const uniqueViolation = (cause: unknown): boolean => {
  const code = typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY"
}

export class ArchiveRaced extends Data.TaggedError("ArchiveRaced") {}

const Cursor = Schema.Array(Schema.Struct({ event_seq: StoredInt }))
const Last = Schema.Array(Schema.Struct({ sequence: StoredInt, hash: Schema.String, envelope: Schema.String }))
const Counts = Schema.Array(
  Schema.Struct({ pending: StoredInt, failed: StoredInt, oldest: Schema.NullOr(StoredTimestamp) })
)
const LastError = Schema.Array(Schema.Struct({ last_error: Schema.NullOr(Schema.String) }))

export interface ArchiveCounts {
  readonly pending: number
  readonly failed: number
  readonly oldestSealedAt: Date | null
  readonly lastError: string | null
}

export class ArchiveRepo extends Effect.Service<ArchiveRepo>()("gateway/ArchiveRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const decodeRows = Schema.decodeUnknown(Schema.Array(ArchiveEntryRow))

    /**
     * The outbox `seq` the archive has taken in, and the chain's last entry (undefined: none yet) with its
     * envelope.
     */
    const position = Effect.fn("ArchiveRepo.position")(function* () {
      const cursor = yield* sql`SELECT event_seq FROM archive_cursor WHERE id = 1`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Cursor)),
        Effect.orDie
      )
      const rows = yield* sql`SELECT sequence, hash, envelope FROM archive_entries ORDER BY sequence DESC LIMIT 1`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Last)),
        Effect.orDie
      )
      return { eventSeq: cursor[0]?.event_seq ?? 0, last: rows[0] }
    })

    /**
     * Appends `entries` and moves the cursor from `fromEventSeq` to `toEventSeq`, in one transaction. The
     * cursor moves only from where the caller read it, so of two processes sealing the same events one
     * writes and the other gets `ArchiveRaced` with nothing written.
     */
    const append = Effect.fn("ArchiveRepo.append")(function* (
      fromEventSeq: number,
      toEventSeq: number,
      entries: ReadonlyArray<NewArchiveEntry>,
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      const attempt = Effect.gen(function* () {
        const moved = yield* sql`UPDATE archive_cursor SET event_seq = ${toEventSeq}
          WHERE id = 1 AND event_seq = ${fromEventSeq} RETURNING event_seq`
        if (moved.length !== 1) return yield* new ArchiveRaced()
        if (entries.length === 0) return
        yield* sql`INSERT INTO archive_entries ${sql.insert(
          entries.map((entry) => ({
            sequence: entry.sequence,
            event_seq: entry.eventSeq,
            approval_id: entry.approvalId,
            hash: entry.hash,
            envelope: entry.envelope,
            sealed_at: stamp,
            attempts: 0,
            next_attempt_at: stamp
          }))
        )}`
      })
      return yield* sql.withTransaction(attempt).pipe(
        Effect.catchTag("SqlError", (error) =>
          // A unique key taken by the other writer's entries is the same race; any other constraint (a NOT
          // NULL, a CHECK) is a defect to see, not a race to retry quietly forever.
          uniqueViolation(error.cause) ? new ArchiveRaced() : Effect.die(error)
        )
      )
    })

    /** The entry to ship next: the lowest sequence not yet acknowledged. */
    const nextUnacknowledged = Effect.fn("ArchiveRepo.nextUnacknowledged")(function* () {
      const rows = yield* sql`SELECT sequence, event_seq, approval_id, hash, envelope, sealed_at, attempts,
        next_attempt_at, last_error FROM archive_entries WHERE acknowledged_at IS NULL
        ORDER BY sequence LIMIT 1`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return rows[0]
    })

    const acknowledge = Effect.fn("ArchiveRepo.acknowledge")(function* (sequence: number, at: Date) {
      yield* sql`UPDATE archive_entries SET acknowledged_at = ${toStoredTimestamp(at)}, last_error = NULL
        WHERE sequence = ${sequence} AND acknowledged_at IS NULL`.pipe(Effect.orDie)
    })

    /** A failed attempt: counted, with when to try again and the failure's class. */
    const failed = Effect.fn("ArchiveRepo.failed")(function* (
      sequence: number,
      attempts: number,
      nextAttemptAt: Date,
      errorClass: string
    ) {
      yield* sql`UPDATE archive_entries SET attempts = ${attempts},
        next_attempt_at = ${toStoredTimestamp(nextAttemptAt)}, last_error = ${errorClass}
        WHERE sequence = ${sequence} AND acknowledged_at IS NULL`.pipe(Effect.orDie)
    })

    /** The figures of `GET /api/v1/approvals/delivery`, read through the partial index of the unacknowledged. */
    const counts = Effect.fn("ArchiveRepo.counts")(function* () {
      const rows = yield* sql`SELECT COUNT(*) AS pending,
        COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0) AS failed, MIN(sealed_at) AS oldest
        FROM archive_entries WHERE acknowledged_at IS NULL`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Counts)),
        Effect.orDie
      )
      const error = yield* sql`SELECT last_error FROM archive_entries WHERE acknowledged_at IS NULL
        ORDER BY sequence LIMIT 1`.pipe(Effect.flatMap(Schema.decodeUnknown(LastError)), Effect.orDie)
      const row = rows[0]
      return {
        pending: row?.pending ?? 0,
        failed: row?.failed ?? 0,
        oldestSealedAt: row?.oldest ?? null,
        lastError: error[0]?.last_error ?? null
      } satisfies ArchiveCounts
    })

    /** Every stored envelope line from `sequence` on, in order (tests and operators' exports). */
    const lines = Effect.fn("ArchiveRepo.lines")(function* (fromSequence: number, limit: number) {
      const rows = yield* sql`SELECT envelope FROM archive_entries WHERE sequence >= ${fromSequence}
        ORDER BY sequence LIMIT ${limit}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ envelope: Schema.String })))),
        Effect.orDie
      )
      return rows.map((row) => row.envelope)
    })

    return { position, append, nextUnacknowledged, acknowledge, failed, counts, lines } as const
  })
}) {}
