import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The access-token signing keys; private parts sealed with the configuration key (docs/signing-keys.md). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY,
    alg TEXT NOT NULL,
    public_jwk TEXT NOT NULL,
    sealed_private TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
    created_at ${timestamp} NOT NULL,
    retired_at ${timestamp},
    CHECK ((status = 'retired') = (retired_at IS NOT NULL))
  )`
  // At most one key signs at a time; concurrent first starts race on this index and the loser re-reads.
  yield* sql`CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active'`
})
