import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The console's listings (docs/console.md). The audit trail is read newest first by (at, id), a page
 * at a time, optionally of one actor or one target (src/store/audit-events.ts, `page`): each listing
 * is a range of one of these indexes however many events the table keeps. `(at, id)` replaces the
 * index on `at` alone, which it covers. The approvals page lists the most recently finished approvals
 * the same way (src/store/approvals.ts, `listFinished`), and configuration proposals of any state
 * (src/store/source-proposals.ts, `list`).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX audit_events_at`
  yield* sql`CREATE INDEX audit_events_recent ON audit_events (at, id)`
  yield* sql`CREATE INDEX audit_events_actor ON audit_events (actor_id, at, id)`
  yield* sql`CREATE INDEX audit_events_target ON audit_events (target_id, at, id)`
  yield* sql`CREATE INDEX source_proposals_recent ON source_proposals (created_at, id)`
  yield* sql`CREATE INDEX approvals_finished ON approvals (finished_at, id) WHERE finished_at IS NOT NULL`
})
