import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Local accounts' factors: the scrypt password hash and the TOTP secret, sealed with the configuration
 * key under context `local_totp:<user_id>`. `totp_last_step` is the last accepted TOTP time step, so
 * a code is accepted once.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE local_credentials (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    password_hash TEXT NOT NULL,
    totp_secret_sealed TEXT,
    totp_last_step INTEGER,
    password_changed_at ${timestamp} NOT NULL
  )`
})
