import { readFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { StorageConfig } from "../../src/config/schema.js"
import { Store, StoreError } from "../../src/store/store.js"
import { randomConfigKey, rawSqlLayer, storeKinds, storeLayer, withStorage } from "../support/databases.js"

const open = (storage: StorageConfig, key = randomConfigKey()) => Effect.scoped(Layer.build(storeLayer(storage, key)))

const refusal = (storage: StorageConfig, key = randomConfigKey()) =>
  Effect.flip(open(storage, key)).pipe(
    Effect.tap((error) => expect(error).toBeInstanceOf(StoreError)),
    Effect.map((error) => error.message)
  )

const raw = <A, E>(storage: StorageConfig, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, rawSqlLayer(storage))

const tableNames = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`,
    orElse: () => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
  })
).pipe(Effect.map((rows) => rows.map((row) => row.name).sort()))

/** Everything a refused start could have touched, to prove it touched nothing. */
const snapshot = (storage: StorageConfig) =>
  storage.type === "sqlite"
    ? Effect.sync(() => readFileSync(storage.path).toString("base64"))
    : raw(
        storage,
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.all([
            sql`SELECT * FROM gateway_meta ORDER BY key`,
            sql`SELECT * FROM signing_keys ORDER BY kid`,
            sql`SELECT * FROM gateway_migrations ORDER BY migration_id`,
            tableNames
          ])
        )
      ).pipe(Effect.map((rows) => JSON.stringify(rows)))

describe.each(storeKinds)("Store on %s", (kind) => {
  it.scoped("creates schema version 10 with its tables on a fresh database", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const context = yield* Layer.build(storeLayer(storage))
      const store = yield* Effect.provide(Store, context)
      expect(store).toMatchObject({ kind, schemaVersion: 10, opened: { created: true } })
      expect(store.where).toMatch(kind === "sqlite" ? /^SQLite database \// : /^PostgreSQL database "gw_test_/)
      const meta = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ key: string; value: string }>`SELECT key, value FROM gateway_meta`
      ).pipe(Effect.provide(context))
      const values = Object.fromEntries(meta.map((row) => [row.key, row.value]))
      expect(values).toMatchObject({ schema_version: "10", store_kind: kind, product_version: "2.4.0" })
      expect(values["key_check"]).toMatch(/^v1\./)
      expect(Date.parse(values["created_at"] ?? "")).not.toBeNaN()
      const tables = yield* Effect.provide(tableNames, context)
      expect(tables).toEqual(expect.arrayContaining(["gateway_meta", "signing_keys", "gateway_migrations"]))
    })
  )

  it.scoped("reopens its own database with the same key", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const key = randomConfigKey()
      const first = Context.get(yield* open(storage, key), Store)
      const second = Context.get(yield* open(storage, key), Store)
      // The second start opened what the first created, and knows when that was.
      expect([first.opened.created, second.opened.created]).toEqual([true, false])
      expect(second.opened.createdAt).toBe(first.opened.createdAt)
    })
  )

  it.scoped("refuses another GATEWAY_CONFIG_KEY and changes nothing", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      yield* open(storage)
      const before = yield* snapshot(storage)
      const message = yield* refusal(storage)
      expect(message).toContain("GATEWAY_CONFIG_KEY does not match the key this database was created with")
      expect(yield* snapshot(storage)).toBe(before)
    })
  )

  it.scoped("refuses another schema version", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const key = randomConfigKey()
      yield* open(storage, key)
      yield* raw(
        storage,
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`UPDATE gateway_meta SET value = '9' WHERE key = 'schema_version'`
        )
      )
      const message = yield* refusal(storage, key)
      expect(message).toContain("has schema version 9; this release (2.4.0) uses schema version 10")
      expect(message).toContain("no migration path")
    })
  )

  it.scoped("refuses a database recorded as the other store kind", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const key = randomConfigKey()
      yield* open(storage, key)
      const other = kind === "sqlite" ? "postgres" : "sqlite"
      yield* raw(
        storage,
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`UPDATE gateway_meta SET value = ${other} WHERE key = 'store_kind'`
        )
      )
      const message = yield* refusal(storage, key)
      expect(message).toContain("the storage type is fixed when a deployment is created")
    })
  )

  it.scoped("refuses a database that is not a gateway database and adds nothing to it", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      yield* raw(
        storage,
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE invoices (id INTEGER PRIMARY KEY)`)
      )
      const message = yield* refusal(storage)
      expect(message).toContain("is not a gateway database")
      expect(message).toContain("invoices")
      expect(yield* raw(storage, tableNames)).toEqual(["invoices"])
    })
  )
})
