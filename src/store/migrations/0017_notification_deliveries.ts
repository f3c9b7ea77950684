import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Approval webhook delivery (docs/approvals.md, "Webhooks"). One worker sends the outbox's events
 * (`approval_events`) strictly in `seq` order, so its progress is one number:
 * `notification_progress.delivered_through`, the last event the receiver acknowledged, set when
 * notifications are first configured to the outbox's latest event (earlier events are never sent).
 * An event whose delivery failed has a row in `notification_deliveries` with its attempts, the
 * stored time of its next attempt and the class of its last error, until it is acknowledged: a
 * restart reads both, so it neither loses, reorders nor hurries a delivery.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE notification_progress (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    delivered_through BIGINT NOT NULL,
    started_at ${timestamp} NOT NULL
  )`
  yield* sql`CREATE TABLE notification_deliveries (
    seq BIGINT PRIMARY KEY,
    event_id TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    attempts INTEGER NOT NULL CHECK (attempts > 0),
    failing_since ${timestamp} NOT NULL,
    last_attempt_at ${timestamp} NOT NULL,
    next_attempt_at ${timestamp} NOT NULL,
    last_error TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX notification_deliveries_approval ON notification_deliveries (approval_id)`
})
