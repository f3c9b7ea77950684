import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The identity connections stored by the gateway (docs/enterprise-sign-in.md, "Identity-provider
 * settings"): one row holding one OIDC and one LDAP connection as JSON without their secrets, the
 * secrets sealed with the configuration key beside it, and the revision `If-Match` names (0 until the
 * first save).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE identity_providers (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL,
    settings TEXT NOT NULL,
    oidc_client_secret_sealed TEXT,
    ldap_bind_password_sealed TEXT,
    updated_at ${timestamp} NOT NULL
  )`
  yield* sql`INSERT INTO identity_providers ${sql.insert({
    id: 1,
    revision: 0,
    settings: "{}",
    oidc_client_secret_sealed: null,
    ldap_bind_password_sealed: null,
    updated_at: new Date().toISOString()
  })}`
})
