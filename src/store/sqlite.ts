import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, ExecutionStrategy, Exit, Layer, Scope } from "effect"
import type { Sealer } from "../crypto/sealer.js"
import { toStoreError } from "./failure-reason.js"
import { initializeStore } from "./initialize.js"
import { type PreparedSqlitePath, prepareSqlitePath, removeCreated } from "./sqlite-path.js"
import { SCHEMA_VERSION, Store, type StoreError } from "./store.js"

const IN_MEMORY: PreparedSqlitePath = { createdFile: false, createdDirectory: undefined }

/**
 * The embedded store. WAL is switched on only after the checks pass: the client's own WAL pragma would
 * rewrite the header of a database we are about to refuse. `:memory:` is accepted for tests.
 */
export const StoreSqlite = (path: string): Layer.Layer<Store | SqlClient.SqlClient, StoreError, Sealer> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const prepared = path === ":memory:" ? IN_MEMORY : yield* prepareSqlitePath(path)
      // The client gets its own scope so a failed start can close it BEFORE removing the files it holds.
      const clientScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const open = Effect.gen(function* () {
        const client = yield* Layer.buildWithScope(
          SqliteClient.layer({ filename: path, disableWAL: true }),
          clientScope
        )
        const sql = Context.get(client, SqlClient.SqlClient)
        yield* sql`PRAGMA busy_timeout = 5000`
        // PostgreSQL always enforces foreign keys; SQLite only when asked, per connection.
        yield* sql`PRAGMA foreign_keys = ON`
        yield* initializeStore("sqlite", `SQLite database ${path}`).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        yield* sql`PRAGMA journal_mode = WAL`
        return Context.make(SqlClient.SqlClient, sql).pipe(
          Context.add(Store, { kind: "sqlite", schemaVersion: SCHEMA_VERSION })
        )
      })
      return yield* open.pipe(
        Effect.catchAllCause(toStoreError(`cannot open SQLite database ${path}`)),
        Effect.onError(() => Effect.andThen(Scope.close(clientScope, Exit.void), removeCreated(path, prepared)))
      )
    })
  )
