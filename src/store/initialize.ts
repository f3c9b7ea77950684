import { Migrator, SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { Sealer } from "../crypto/sealer.js"
import { toStoreError } from "./failure-reason.js"
import { MIGRATIONS_TABLE, migrations } from "./migrations/index.js"
import { PRODUCT_VERSION, SCHEMA_VERSION, StoreError, type StoreKind } from "./store.js"

const KEY_CHECK_CONTEXT = "gateway_meta:key_check"
const KEY_CHECK_PLAINTEXT = "gateway configuration key check"
// Arbitrary constant: serializes concurrent first starts against one PostgreSQL database.
const INIT_LOCK_ID = 7_466_100_010

const MetaRows = Schema.Array(Schema.Struct({ key: Schema.String, value: Schema.String }))

const storeKindName = (kind: string) => (kind === "postgres" ? "PostgreSQL" : kind === "sqlite" ? "SQLite" : kind)

/** Reads nothing but catalog tables; decides whether this is empty, ours, or someone else's. */
const listTables = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ readonly name: string }>`SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = current_schema()`,
    orElse: () =>
      sql<{ readonly name: string }>`SELECT name FROM sqlite_master
        WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`
  })
).pipe(Effect.map((rows) => rows.map((row) => row.name)))

const verifyMeta = (where: string, kind: StoreKind) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const sealer = yield* Sealer
    const refuse = (message: string) => new StoreError({ message: `${where} ${message}` })
    const rows = yield* sql`SELECT key, value FROM gateway_meta`.pipe(
      Effect.flatMap(Schema.decodeUnknown(MetaRows)),
      Effect.mapError(() => refuse("has an unreadable gateway_meta table"))
    )
    const meta = new Map(rows.map((row) => [row.key, row.value]))
    const version = meta.get("schema_version")
    if (version === undefined) {
      return yield* refuse("has no schema_version in gateway_meta: it was not completely created")
    }
    if (version !== String(SCHEMA_VERSION)) {
      return yield* refuse(
        `has schema version ${version}; this release (${PRODUCT_VERSION}) uses schema version ` +
          `${SCHEMA_VERSION} and has no migration path`
      )
    }
    const recordedKind = meta.get("store_kind")
    if (recordedKind !== kind) {
      return yield* refuse(
        `was created as a ${storeKindName(recordedKind ?? "unknown")} store but is opened as a ` +
          `${storeKindName(kind)} store; the storage type is fixed when a deployment is created`
      )
    }
    const keyCheck = meta.get("key_check")
    const opened = keyCheck === undefined ? false : yield* Effect.isSuccess(sealer.open(keyCheck, KEY_CHECK_CONTEXT))
    if (!opened) {
      return yield* refuse(
        "was not opened: GATEWAY_CONFIG_KEY does not match the key this database was created with; " +
          "nothing was written. Start with the original key: secrets sealed with it cannot be opened with another"
      )
    }
    return meta.get("created_at")
  })

const migrate = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The Migrator probes its table with a query that fails when the table is missing; inside our
  // transaction that failure would abort the whole PostgreSQL transaction, so create it up front.
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE TABLE IF NOT EXISTS ${sql(MIGRATIONS_TABLE)} (
      migration_id integer PRIMARY KEY,
      created_at timestamp with time zone NOT NULL DEFAULT now(),
      name text NOT NULL
    )`,
    orElse: () => Effect.void
  })
  yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE })
})

const writeMeta = (kind: StoreKind) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const sealer = yield* Sealer
    const now = new Date(yield* Clock.currentTimeMillis).toISOString()
    yield* sql`INSERT INTO gateway_meta ${sql.insert([
      { key: "schema_version", value: String(SCHEMA_VERSION) },
      { key: "store_kind", value: kind },
      { key: "key_check", value: sealer.seal(KEY_CHECK_PLAINTEXT, KEY_CHECK_CONTEXT) },
      { key: "product_version", value: PRODUCT_VERSION },
      { key: "created_at", value: now }
    ])}`
    return now
  })

const openOrCreate = (kind: StoreKind, where: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(${INIT_LOCK_ID})`,
      orElse: () => Effect.void
    })
    const tables = yield* listTables
    const fresh = tables.length === 0
    if (!fresh && !tables.includes("gateway_meta")) {
      const sample = tables.slice(0, 5).join(", ") + (tables.length > 5 ? ", …" : "")
      return yield* new StoreError({
        message:
          `${where} is not a gateway database: it has tables (${sample}) but no gateway_meta. ` +
          "Point storage at an empty database or a new file"
      })
    }
    const createdAt = fresh ? undefined : yield* verifyMeta(where, kind)
    yield* migrate
    if (fresh) return { created: true, createdAt: yield* writeMeta(kind) } satisfies Opened
    return { created: false, createdAt } satisfies Opened
  })

/** What opening found: whether this start created the database, and when it was created. */
export interface Opened {
  readonly created: boolean
  /** `gateway_meta.created_at` (ISO 8601); absent in a database from before it was written. */
  readonly createdAt: string | undefined
}

/**
 * Opens the store safely: every check runs before the first write, so a wrong key, a foreign database or
 * another schema version leaves the database untouched. Creation is one transaction, so a crash leaves
 * either nothing or a complete schema-10 database.
 */
export const initializeStore = (kind: StoreKind, where: string, secrets: ReadonlyArray<string> = []) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(openOrCreate(kind, where))).pipe(
    // Driver errors and failed migrations alike: startup must end with a sentence, not a stack.
    Effect.catchAllCause(toStoreError(`cannot initialize ${where}`, secrets))
  )
