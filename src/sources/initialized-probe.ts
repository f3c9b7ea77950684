import { existsSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { Cause, Duration, Effect, type Layer, Schema } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import { unavailableCause } from "../store/unavailable.js"

const Marker = Schema.Array(Schema.Struct({ initialized_at: Schema.NullOr(Schema.Unknown) }))

/** Whether managed storage is initialized, as `gateway validate` asks it: read-only, never migrating. */
export type ManagedState = "initialized" | "not_initialized" | { readonly unknown: string }

const read = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`SELECT initialized_at FROM managed_sources_state WHERE id = 1`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Marker)),
    Effect.map((rows): ManagedState => (rows[0]?.initialized_at == null ? "not_initialized" : "initialized"))
  )
)

/**
 * Reads the initialization marker of the configured store without opening it as the gateway does (no
 * checks, no migrations, no key): a file that does not exist yet, or a database without the marker's
 * table, is a deployment not created, hence not initialized; a store that cannot be read gives "cannot
 * tell" and why, in fixed words (never a driver's message, a host or a password).
 */
export const probeManagedState = (config: GatewayConfig): Effect.Effect<ManagedState> => {
  const storage = config.storage
  if (storage.type === "sqlite" && (storage.path === ":memory:" || !existsSync(storage.path))) {
    return Effect.succeed("not_initialized")
  }
  const client: Effect.Effect<Layer.Layer<SqlClient.SqlClient, unknown>> =
    storage.type === "sqlite"
      ? Effect.promise(() => import("@effect/sql-sqlite-node")).pipe(
          Effect.map(({ SqliteClient }) =>
            SqliteClient.layer({ filename: storage.path, readonly: true, disableWAL: true })
          )
        )
      : Effect.promise(() => import("@effect/sql-pg")).pipe(
          Effect.map(({ PgClient }) => PgClient.layer({ url: storage.url, connectTimeout: Duration.seconds(5) }))
        )
  return Effect.flatMap(client, (layer) => Effect.provide(read, layer)).pipe(
    Effect.scoped,
    Effect.timeout(Duration.seconds(10)),
    Effect.catchAllCause((cause) => {
      // No marker table: a database the gateway has not created yet (a first install), so not initialized.
      if (hasNoTable(cause)) return Effect.succeed<ManagedState>("not_initialized")
      // Otherwise fixed words and a code (src/store/unavailable.ts), never a driver's message.
      const reason = unavailableCause(cause)
      return Effect.succeed<ManagedState>({
        unknown: reason === undefined ? "the store could not be read" : `the store did not answer: ${reason}`
      })
    })
  )
}

/** PostgreSQL's undefined_table (42P01) or SQLite's "no such table", anywhere in the failure's causes. */
const hasNoTable = (cause: Cause.Cause<unknown>): boolean => {
  const seen = (error: unknown, depth: number): boolean => {
    if (typeof error !== "object" || error === null || depth > 8) return false
    const { code, message } = error as { code?: unknown; message?: unknown }
    if (code === "42P01" || (typeof message === "string" && message.startsWith("no such table"))) return true
    return seen((error as { cause?: unknown }).cause, depth + 1)
  }
  return [...Cause.failures(cause), ...Cause.defects(cause)].some((error) => seen(error, 0))
}
