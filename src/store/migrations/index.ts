import type { SqlClient } from "@effect/sql"
import type { Effect } from "effect"
import gatewayMeta from "./0001_gateway_meta.js"
import signingKeys from "./0002_signing_keys.js"

/** The Migrator's bookkeeping table (named so it cannot clash with another tool's migrations). */
export const MIGRATIONS_TABLE = "gateway_migrations"

/**
 * Every migration of this release; together they ARE schema version 10 (spec Versioning 1, 3: fresh
 * deployments only, no migration workflow). To add a table: add `NNNN_name.ts` beside this file and
 * register it here with the next number. Keys follow the Migrator's `<id>_<name>` convention.
 */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_gateway_meta": gatewayMeta,
  "0002_signing_keys": signingKeys
}
