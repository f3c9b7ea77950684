import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { groupNameKey } from "../../policy/group-name.js"

const Rows = Schema.Array(Schema.Struct({ id: Schema.String, username: Schema.String }))

/**
 * Local accounts people are given (docs/local-accounts.md).
 *
 * - `users.username_key`: the key sign-in names are compared by (NFC, case-folded, trimmed: the group
 *   names' key, src/policy/group-name.ts), unique among local accounts, so `Alice` and `alice` cannot
 *   both exist and two racing creates cannot both win. Backfilled for the accounts there are (the
 *   built-in administrator, `admin`).
 * - `enrolment_links`: at most one live enrolment link per account (a newer one replaces it), stored
 *   only as the SHA-256 hash of its token; redeemed once by a conditional DELETE, dead after
 *   `expires_at`, deleted when the account is disabled or removed.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`ALTER TABLE users ADD COLUMN username_key TEXT`
  const rows = yield* sql`SELECT id, username FROM users WHERE kind <> 'enterprise' AND username IS NOT NULL`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Rows))
  )
  for (const row of rows) yield* sql`UPDATE users SET username_key = ${groupNameKey(row.username)} WHERE id = ${row.id}`
  yield* sql`CREATE UNIQUE INDEX users_local_username_key ON users (username_key) WHERE kind <> 'enterprise'`
  // The local accounts' listing pages by id within a kind, however many enterprise identities there are.
  yield* sql`CREATE INDEX users_kind_id ON users (kind, id)`
  yield* sql`CREATE TABLE enrolment_links (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at ${timestamp} NOT NULL,
    expires_at ${timestamp} NOT NULL
  )`
})
