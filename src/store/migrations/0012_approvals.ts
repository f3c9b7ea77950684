import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Write approvals (docs/approvals.md). One row per approval: who asked (issuer, subject), for which
 * backend tool, the sealed intent (normalized arguments and business metadata, AES-GCM with the
 * configuration key) and its SHA-256 (which binds the approval: votes and the resume check it), the
 * policy that applied, the state and its deadlines, and the sealed result once executed.
 * `operation_key` is the SHA-256 of issuer, subject, backend, tool and the caller's operation id:
 * unique, so two racing requests with one id create one approval. Votes are rows of their own, one
 * per reviewer. When retention drops a finished approval, its operation key stays in
 * `approval_tombstones` (a hash and a state, nothing else), so the id is never usable again.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    operation_key TEXT UNIQUE,
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    client_id TEXT,
    backend TEXT NOT NULL,
    tool TEXT NOT NULL,
    exposed_name TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    intent_sealed TEXT,
    intent_hash TEXT NOT NULL,
    required_approvals INTEGER NOT NULL CHECK (required_approvals IN (1, 2)),
    require_step_up INTEGER NOT NULL,
    approvers TEXT NOT NULL,
    risk TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN
      ('pending', 'approved', 'executing', 'completed', 'rejected', 'revoked', 'expired', 'unknown')),
    created_at ${timestamp} NOT NULL,
    expires_at ${timestamp} NOT NULL,
    approved_at ${timestamp},
    execute_by ${timestamp},
    finished_at ${timestamp},
    decided_by TEXT,
    result_sealed TEXT,
    revision INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX approvals_requester ON approvals (issuer, subject, state)`
  yield* sql`CREATE INDEX approvals_state ON approvals (state, finished_at)`
  yield* sql`CREATE TABLE approval_votes (
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    reviewer_id TEXT NOT NULL,
    reviewer_name TEXT NOT NULL,
    step_up_acr TEXT,
    step_up_at ${timestamp},
    voted_at ${timestamp} NOT NULL,
    PRIMARY KEY (approval_id, reviewer_id)
  )`
  // One per spent operation id, kept for ever: on SQLite without a rowid, so the 64-character key is
  // stored once (the table is its own key index: ~110 instead of ~190 bytes a tombstone).
  const withoutRowid = sql.onDialectOrElse({
    sqlite: () => sql.literal("WITHOUT ROWID"),
    orElse: () => sql.literal("")
  })
  yield* sql`CREATE TABLE approval_tombstones (
    operation_key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    finished_at ${timestamp} NOT NULL
  ) ${withoutRowid}`
})
