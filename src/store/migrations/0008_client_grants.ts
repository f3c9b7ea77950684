import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Consent (`client_authorization.enabled`): which client a person allowed to act for them, with which
 * scopes. Revoking a grant deletes the row and revokes that client's sessions for the person.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE client_grants (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at ${timestamp} NOT NULL,
    updated_at ${timestamp} NOT NULL,
    PRIMARY KEY (user_id, client_id)
  )`
})
