import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Duration, Effect, ExecutionStrategy, Exit, Layer, Scope } from "effect"
import type { Sealer } from "../crypto/sealer.js"
import { toStoreError } from "./failure-reason.js"
import { initializeStore } from "./initialize.js"
import { type PreparedSqlitePath, prepareSqlitePath, removeCreated } from "./sqlite-path.js"
import { SCHEMA_VERSION, Store, type StoreError } from "./store.js"

const IN_MEMORY: PreparedSqlitePath = { createdFile: false, createdDirectory: undefined }

/**
 * How long the client keeps a prepared statement. Its cache keeps a failed preparation as well: with
 * the default (10 minutes), a statement first prepared while the file was locked by another process or
 * could not be read would fail for 10 minutes after the store answers again. Preparing a hot statement
 * again once a second costs microseconds.
 */
export const PREPARE_CACHE_TTL = Duration.seconds(1)

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
          SqliteClient.layer({ filename: path, disableWAL: true, prepareCacheTTL: PREPARE_CACHE_TTL }),
          clientScope
        )
        const sql = Context.get(client, SqlClient.SqlClient)
        yield* sql`PRAGMA busy_timeout = 5000`
        // PostgreSQL always enforces foreign keys; SQLite only when asked, per connection.
        yield* sql`PRAGMA foreign_keys = ON`
        const where = `SQLite database ${path}`
        const opened = yield* initializeStore("sqlite", where).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        yield* sql`PRAGMA journal_mode = WAL`
        return Context.make(SqlClient.SqlClient, sql).pipe(
          Context.add(Store, { kind: "sqlite", schemaVersion: SCHEMA_VERSION, where, opened })
        )
      })
      return yield* open.pipe(
        Effect.catchAllCause(toStoreError(`cannot open SQLite database ${path}`)),
        Effect.onError(() => Effect.andThen(Scope.close(clientScope, Exit.void), removeCreated(path, prepared)))
      )
    })
  )
