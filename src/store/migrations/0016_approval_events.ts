import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The approval event outbox (docs/approvals.md, "Events"): one row per change of an approval's state,
 * written in the transaction of the change, read in `seq` order by the webhook notifier and the audit
 * archive. `seq` comes from the single row of `approval_event_counter`, updated in that same
 * transaction: the row lock (PostgreSQL) or the one writer (SQLite) makes the numbers commit in order,
 * so a reader that has seen `seq` n never later finds a smaller one appear (docs/decisions.md, "The
 * approval outbox numbers its events under a lock"). No foreign key to `approvals`: an event outlives
 * its approval's retention. Nothing here is an argument, a result, a secret or a token: the intent and
 * the result are bound by the SHA-256 of their sealed text only.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE approval_event_counter (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL
  )`
  yield* sql`INSERT INTO approval_event_counter (id, seq) VALUES (1, 0)`
  yield* sql`CREATE TABLE approval_events (
    seq BIGINT PRIMARY KEY CHECK (seq > 0),
    event_id TEXT NOT NULL UNIQUE,
    approval_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('requested', 'vote', 'approved', 'rejected', 'revoked',
      'executed', 'outcome_unknown', 'expired', 'votes_withdrawn', 'reminder')),
    actor TEXT,
    occurred_at ${timestamp} NOT NULL,
    expires_at ${timestamp} NOT NULL,
    reason TEXT,
    evidence TEXT NOT NULL,
    intent_hash TEXT,
    result_hash TEXT
  )`
  // The reminder check asks "was this approval reminded of this deadline?" of one approval's events.
  yield* sql`CREATE INDEX approval_events_approval ON approval_events (approval_id, action)`
})
