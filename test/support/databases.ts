import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import type { StorageConfig } from "../../src/config/schema.js"
import { ConfigKey } from "../../src/crypto/config-key.js"
import { Sealer } from "../../src/crypto/sealer.js"
import { StoreLive } from "../../src/store/live.js"
import type { Store, StoreError } from "../../src/store/store.js"

/**
 * Real databases for tests: a temp-dir SQLite file and a throwaway PostgreSQL database, each removed when
 * its scope closes. Every repository test runs against both (`storeKinds`).
 */
export const storeKinds = ["sqlite", "postgres"] as const
export type StoreKindUnderTest = (typeof storeKinds)[number]

/** The maintenance database tests create their own databases from (trust auth on the test machines). */
export const postgresAdminUrl = process.env["GATEWAY_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** A fresh temp directory, removed (with everything in it) when the scope closes. */
export const withTempDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "gateway-test-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** A path for a SQLite database that does not exist yet, in a temp directory removed afterwards. */
export const withSqlite: Effect.Effect<string, never, Scope.Scope> = Effect.map(withTempDir, (dir) =>
  join(dir, "gateway.db")
)

const adminStatement = (statement: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(postgresAdminUrl) }))
      yield* Context.get(context, PgClient.PgClient).unsafe(statement)
    })
  ).pipe(Effect.orDie)

const STALE_AFTER_SECONDS = 3600

/**
 * Drops test databases left by runs that could not clean up (killed processes, suites whose layer was
 * built but never released). Names carry their creation time, so only clearly abandoned ones go.
 */
const dropStaleDatabases = Effect.scoped(
  Effect.gen(function* () {
    const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(postgresAdminUrl) }))
    const sql = Context.get(context, PgClient.PgClient)
    const rows = yield* sql<{
      readonly datname: string
    }>`SELECT datname FROM pg_database WHERE datname LIKE 'gw\_test\_%'`
    const cutoff = Math.floor(Date.now() / 1000) - STALE_AFTER_SECONDS
    for (const { datname } of rows) {
      const created = Number.parseInt(datname.split("_")[2] ?? "", 36)
      if (/^gw_test_[0-9a-z]+_[0-9a-f]+$/.test(datname) && created < cutoff) {
        // Another test process may be dropping the same one; either way it goes.
        yield* Effect.ignore(sql.unsafe(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`))
      }
    }
  })
).pipe(Effect.ignore)

/** A new, empty PostgreSQL database `gw_test_<time>_<random>`, dropped (connections and all) with the scope. */
export const withPostgres: Effect.Effect<Redacted.Redacted<string>, never, Scope.Scope> = Effect.acquireRelease(
  Effect.suspend(() => {
    const name = `gw_test_${Math.floor(Date.now() / 1000).toString(36)}_${randomBytes(6).toString("hex")}`
    return dropStaleDatabases.pipe(Effect.zipRight(adminStatement(`CREATE DATABASE ${name}`)), Effect.as(name))
  }),
  (name) => adminStatement(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
).pipe(
  Effect.map((name) => {
    const url = new URL(postgresAdminUrl)
    url.pathname = `/${name}`
    return Redacted.make(url.toString())
  })
)

/** A fresh, empty storage of the given kind, as the configuration would name it. */
export const withStorage = (kind: StoreKindUnderTest): Effect.Effect<StorageConfig, never, Scope.Scope> =>
  kind === "sqlite"
    ? Effect.map(withSqlite, (path) => ({ type: "sqlite" as const, path }))
    : Effect.map(withPostgres, (url) => ({ type: "postgres" as const, url }))

/** A random, valid configuration key. */
export const randomConfigKey = (): Redacted.Redacted<Uint8Array> => Redacted.make(new Uint8Array(randomBytes(32)))

/** `Sealer` and `ConfigKey` for `key`, as production composes them. */
export const sealerLayer = (key: Redacted.Redacted<Uint8Array>): Layer.Layer<Sealer | ConfigKey> =>
  Sealer.Default.pipe(Layer.provideMerge(ConfigKey.layer(key)))

/** The opened store over `storage`, with the Sealer it needs; what repository tests provide. */
export const storeLayer = (
  storage: StorageConfig,
  key: Redacted.Redacted<Uint8Array> = randomConfigKey()
): Layer.Layer<Store | SqlClient.SqlClient | Sealer | ConfigKey, StoreError> =>
  StoreLive(storage).pipe(Layer.provideMerge(sealerLayer(key)))

/** `storeLayer` over a fresh database of `kind` that lives as long as the layer. */
export const testStoreLayer = (
  kind: StoreKindUnderTest,
  key: Redacted.Redacted<Uint8Array> = randomConfigKey()
): Layer.Layer<Store | SqlClient.SqlClient | Sealer | ConfigKey, StoreError> =>
  Layer.unwrapScoped(Effect.map(withStorage(kind), (storage) => storeLayer(storage, key)))

/**
 * A plain client on `storage`, bypassing the Store's checks: for tests that arrange or inspect raw rows.
 * WAL stays off so arranging a SQLite file does not change its journal mode behind the test's back.
 */
export const rawSqlLayer = (storage: StorageConfig): Layer.Layer<SqlClient.SqlClient> =>
  storage.type === "sqlite"
    ? Layer.orDie(SqliteClient.layer({ filename: storage.path, disableWAL: true }))
    : Layer.orDie(PgClient.layer({ url: storage.url }))
