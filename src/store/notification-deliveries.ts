import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

const StoredSeq = Schema.Union(Schema.Int, Schema.NumberFromString.pipe(Schema.int()))

/** An event whose delivery failed and is waiting for its next attempt. */
export const FailingDelivery = Schema.Struct({
  seq: StoredSeq,
  event_id: Schema.String,
  approval_id: Schema.String,
  attempts: Schema.Int,
  failing_since: StoredTimestamp,
  last_attempt_at: StoredTimestamp,
  next_attempt_at: StoredTimestamp,
  last_error: Schema.String
})
export type FailingDelivery = typeof FailingDelivery.Type

const Progress = Schema.Array(Schema.Struct({ delivered_through: StoredSeq }))
const Counts = Schema.Array(Schema.Struct({ n: Schema.Union(Schema.Number, Schema.NumberFromString) }))

/** A failed attempt, as the worker records it. */
export interface FailedAttempt {
  readonly seq: number
  readonly eventId: string
  readonly approvalId: string
  readonly attempts: number
  readonly at: Date
  readonly nextAttemptAt: Date
  readonly errorClass: string
}

/**
 * Webhook delivery state (`notification_progress`, `notification_deliveries`; the migration says
 * why it is one number and a row per failing event). Only the one worker writes it.
 */
export class NotificationDeliveryRepo extends Effect.Service<NotificationDeliveryRepo>()(
  "gateway/NotificationDeliveryRepo",
  {
    effect: Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const decodeFailing = Schema.decodeUnknown(Schema.Array(FailingDelivery))

      /**
       * The last acknowledged event. The first call ever starts delivery after the outbox's latest
       * event (docs/approvals.md, "Webhooks": events from before notifications were configured are
       * never sent).
       */
      const start = Effect.fn("NotificationDeliveryRepo.start")(function* (at: Date) {
        yield* sql`INSERT INTO notification_progress (id, delivered_through, started_at)
          SELECT 1, seq, ${toStoredTimestamp(at)} FROM approval_event_counter WHERE id = 1
          ON CONFLICT (id) DO NOTHING`.pipe(Effect.orDie)
        return Option.getOrElse(yield* deliveredThrough(), () => 0)
      })

      const deliveredThrough = Effect.fn("NotificationDeliveryRepo.deliveredThrough")(function* () {
        const rows = yield* sql`SELECT delivered_through FROM notification_progress WHERE id = 1`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Progress)),
          Effect.orDie
        )
        return Option.fromNullable(rows[0]?.delivered_through)
      })

      /** The failure record of event `seq`, if its delivery has failed before. */
      const failing = Effect.fn("NotificationDeliveryRepo.failing")(function* (seq: number) {
        const rows = yield* sql`SELECT * FROM notification_deliveries WHERE seq = ${seq}`.pipe(
          Effect.flatMap(decodeFailing),
          Effect.orDie
        )
        return Option.fromNullable(rows[0])
      })

      /** The receiver acknowledged event `seq`: progress moves to it and its failure record goes. */
      const acknowledge = Effect.fn("NotificationDeliveryRepo.acknowledge")(function* (seq: number) {
        yield* sql
          .withTransaction(
            Effect.zipRight(
              sql`DELETE FROM notification_deliveries WHERE seq = ${seq}`,
              sql`UPDATE notification_progress SET delivered_through = ${seq} WHERE id = 1 AND delivered_through < ${seq}`
            )
          )
          .pipe(Effect.orDie)
      })

      /** Records a failed attempt and when the next one is due. */
      const recordFailure = Effect.fn("NotificationDeliveryRepo.recordFailure")(function* (attempt: FailedAttempt) {
        const at = toStoredTimestamp(attempt.at)
        yield* sql`INSERT INTO notification_deliveries ${sql.insert({
          seq: attempt.seq,
          event_id: attempt.eventId,
          approval_id: attempt.approvalId,
          attempts: attempt.attempts,
          failing_since: at,
          last_attempt_at: at,
          next_attempt_at: toStoredTimestamp(attempt.nextAttemptAt),
          last_error: attempt.errorClass
        })} ON CONFLICT (seq) DO UPDATE SET attempts = ${attempt.attempts}, last_attempt_at = ${at},
          next_attempt_at = ${toStoredTimestamp(attempt.nextAttemptAt)}, last_error = ${attempt.errorClass}`.pipe(
          Effect.orDie
        )
      })

      /** Failure records of one approval's events (the review page flags them). */
      const failingOf = Effect.fn("NotificationDeliveryRepo.failingOf")(function* (approvalId: string) {
        return yield* sql`SELECT * FROM notification_deliveries WHERE approval_id = ${approvalId} ORDER BY seq`.pipe(
          Effect.flatMap(decodeFailing),
          Effect.orDie
        )
      })

      /** The failure record nearest the head (the one holding the queue), and how many there are. */
      const failures = Effect.fn("NotificationDeliveryRepo.failures")(function* () {
        const head = yield* sql`SELECT * FROM notification_deliveries ORDER BY seq LIMIT 1`.pipe(
          Effect.flatMap(decodeFailing),
          Effect.orDie
        )
        const count = yield* sql`SELECT COUNT(*) AS n FROM notification_deliveries`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Counts)),
          Effect.orDie
        )
        return { head: Option.fromNullable(head[0]), count: Number(count[0]?.n ?? 0) }
      })

      return { start, deliveredThrough, failing, acknowledge, recordFailure, failingOf, failures } as const
    })
  }
) {}
