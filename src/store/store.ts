import { Context, Data } from "effect"
import { version } from "../version.js"
import type { Opened } from "./initialize.js"

/** A fresh 2.4.0 deployment uses schema version 10, with no migration path (docs/storage.md). */
export const SCHEMA_VERSION = 10
export const PRODUCT_VERSION = version

export type StoreKind = "sqlite" | "postgres"

/** Why the store could not be opened. Messages name the database but never carry a password. */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly message: string
}> {}

/**
 * The opened, verified and migrated database of this deployment. Repositories use `SqlClient.SqlClient`,
 * which every store layer provides alongside this tag, so they are written once for both dialects.
 */
export class Store extends Context.Tag("gateway/Store")<
  Store,
  {
    readonly kind: StoreKind
    readonly schemaVersion: typeof SCHEMA_VERSION
    /** Which database, for messages: `SQLite database <path>`, `PostgreSQL database "<name>" at host:port` (never a password). */
    readonly where: string
    /** Whether this start created it (an empty database or a new file), and when it was created. */
    readonly opened: Opened
  }
>() {}
