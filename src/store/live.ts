import type { SqlClient } from "@effect/sql"
import type { Layer } from "effect"
import type { StorageConfig } from "../config/schema.js"
import type { Sealer } from "../crypto/sealer.js"
import { StorePg } from "./postgres.js"
import { StoreSqlite } from "./sqlite.js"
import type { Store, StoreError } from "./store.js"

/** The store chosen at deployment creation (spec: Storage). Needs the `Sealer` to check the config key. */
export const StoreLive = (storage: StorageConfig): Layer.Layer<Store | SqlClient.SqlClient, StoreError, Sealer> =>
  storage.type === "sqlite" ? StoreSqlite(storage.path) : StorePg(storage.url)
