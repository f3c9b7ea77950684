import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The review list reads open approvals oldest first, a page at a time, by (created_at, id)
 * (src/store/approvals.ts, `listOpen`): this index holds exactly the open ones in that order, so each
 * page is an index range however many finished approvals the table keeps.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX approvals_open ON approvals (created_at, id) WHERE state IN ('pending', 'approved')`
})
