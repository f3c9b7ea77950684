import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Facts about the deployment itself: schema version, store kind, config-key check value. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE gateway_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  )`
})
