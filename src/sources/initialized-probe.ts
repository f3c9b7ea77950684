import { existsSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, type Layer, Redacted, Schema } from "effect"
import type { GatewayConfig } from "../config/schema.js"

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
 * checks, no migrations, no key): a file that does not exist yet is a deployment not created, hence not
 * initialized; a store that cannot be read gives "cannot tell" and why (never a password).
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
  const password = storage.type === "postgres" ? (URL.parse(Redacted.value(storage.url))?.password ?? "") : ""
  return Effect.flatMap(client, (layer) => Effect.provide(read, layer)).pipe(
    Effect.scoped,
    Effect.timeout(Duration.seconds(10)),
    Effect.catchAllCause((cause) => {
      const text = String(cause).split("\n")[0] ?? "unreadable"
      const safe = password === "" ? text : text.replaceAll(password, "***")
      return Effect.succeed<ManagedState>({
        unknown: /no such table|does not exist/.test(safe) ? "the store has no managed storage tables yet" : safe
      })
    })
  )
}
