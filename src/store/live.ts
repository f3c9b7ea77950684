import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { StorageConfig } from "../config/schema.js"
import type { Sealer } from "../crypto/sealer.js"
import type { Store, StoreError } from "./store.js"

/**
 * The store chosen at deployment creation (docs/storage.md). Needs the `Sealer` to check the config key.
 * Each driver is imported only when chosen: a SQLite deployment never loads the PostgreSQL client and
 * the reverse, which keeps start-up and idle memory down.
 */
export const StoreLive = (storage: StorageConfig): Layer.Layer<Store | SqlClient.SqlClient, StoreError, Sealer> =>
  Layer.unwrapEffect(
    storage.type === "sqlite"
      ? Effect.promise(() => import("./sqlite.js")).pipe(Effect.map(({ StoreSqlite }) => StoreSqlite(storage.path)))
      : Effect.promise(() => import("./postgres.js")).pipe(Effect.map(({ StorePg }) => StorePg(storage.url)))
  )
