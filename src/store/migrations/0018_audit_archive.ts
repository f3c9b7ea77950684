import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The audit archive (docs/audit-archive.md): `archive_entries` holds each signed envelope exactly as it
 * was written, once, with its shipping state; `archive_cursor` is the last outbox `seq` (approval_events)
 * the archive has taken in, reminders included, so sealing resumes where it stopped. `sequence` is the
 * archive's own counter, contiguous from 1. The partial indexes serve the shipping worker (the lowest
 * unacknowledged entry) and retention (does this approval still have one?), costing nothing once shipped.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE archive_cursor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    event_seq BIGINT NOT NULL
  )`
  yield* sql`INSERT INTO archive_cursor (id, event_seq) VALUES (1, 0)`
  yield* sql`CREATE TABLE archive_entries (
    sequence BIGINT PRIMARY KEY CHECK (sequence > 0),
    event_seq BIGINT NOT NULL UNIQUE,
    approval_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    envelope TEXT NOT NULL,
    sealed_at ${timestamp} NOT NULL,
    acknowledged_at ${timestamp},
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at ${timestamp} NOT NULL,
    last_error TEXT
  )`
  yield* sql`CREATE INDEX archive_entries_unacknowledged ON archive_entries (sequence) WHERE acknowledged_at IS NULL`
  yield* sql`CREATE INDEX archive_entries_held ON archive_entries (approval_id) WHERE acknowledged_at IS NULL`
})
