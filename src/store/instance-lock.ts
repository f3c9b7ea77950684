import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer } from "effect"
import type { StorageConfig } from "../config/schema.js"
import { Store, StoreError } from "./store.js"

// Arbitrary constant, beside initialize.ts's: the lock of the one serving gateway on a PostgreSQL database.
const INSTANCE_LOCK_ID = 7_466_100_011
/** How long a starting gateway waits for the one before it to stop (a restart's overlap). */
export const INSTANCE_WAIT = Duration.seconds(15)
const RETRY_EVERY = Duration.millis(500)

/** Tries `tryLock` until it holds, up to `INSTANCE_WAIT` (logging `store.instance_waiting` once), else fails naming why. */
const waitForLock = (tryLock: Effect.Effect<boolean>, where: string) =>
  Effect.gen(function* () {
    const until = (yield* Clock.currentTimeMillis) + Duration.toMillis(INSTANCE_WAIT)
    let waited = false
    while (!(yield* tryLock)) {
      if (!waited) {
        waited = true
        yield* Effect.logWarning("store.instance_waiting").pipe(
          Effect.annotateLogs({
            event: "store.instance_waiting",
            store: where,
            wait_seconds: Duration.toSeconds(INSTANCE_WAIT)
          })
        )
      }
      if ((yield* Clock.currentTimeMillis) >= until) {
        return yield* new StoreError({
          message:
            `${where} is in use by another gateway (it holds the instance lock): one gateway serves a ` +
            "database (docs/storage.md). Stop the other one first, or point storage at another database"
        })
      }
      yield* Effect.sleep(RETRY_EVERY)
    }
  })

/**
 * One serving gateway per database (docs/storage.md, "One instance per database"): `serve` holds a lock
 * for as long as it runs — on PostgreSQL a session advisory lock on a connection of its own, on SQLite
 * an exclusive transaction on a lock file beside the database (`<path>.lock`: the operating system
 * drops the lock with the process, however it ends). A second gateway started on the database waits up
 * to `INSTANCE_WAIT` for the first to stop (a restart whose old process still drains), logging
 * `store.instance_waiting` once, then refuses to start, naming why. Two gateways on one database would
 * each run the background workers (webhooks, the audit archive, retention) and keep their own
 * in-memory state (token caches, login throttles, policy), so their answers would disagree. The
 * commands that open the store for a moment (`init-admin`, `dev-token`) take no lock. A PostgreSQL lock
 * is lost with its connection (the server restarted): the gateway keeps serving, and this guard is for
 * starts, not a fence.
 */
const instanceLock = (storage: StorageConfig) =>
  Effect.gen(function* () {
    const { where } = yield* Store
    if (storage.type === "sqlite") {
      if (storage.path === ":memory:") return
      const { SqliteClient } = yield* Effect.promise(() => import("@effect/sql-sqlite-node"))
      const lock = Context.get(
        yield* Layer.build(SqliteClient.layer({ filename: `${storage.path}.lock`, disableWAL: true })),
        SqlClient.SqlClient
      )
      yield* lock`PRAGMA busy_timeout = 0`
      const tryLock = lock`BEGIN EXCLUSIVE`.pipe(
        Effect.as(true),
        Effect.catchTag("SqlError", () => Effect.succeed(false))
      )
      return yield* waitForLock(tryLock, where)
    }
    const sql = yield* SqlClient.SqlClient
    const connection = yield* sql.reserve
    const tryLock = connection.executeValues(`SELECT pg_try_advisory_lock(${INSTANCE_LOCK_ID})`, []).pipe(
      Effect.map((rows) => rows[0]?.[0] === true),
      Effect.orDie
    )
    return yield* waitForLock(tryLock, where)
  }).pipe(
    Effect.catchTag("SqlError", () =>
      Effect.flatMap(Store, ({ where }) =>
        Effect.fail(new StoreError({ message: `cannot take the instance lock of ${where}` }))
      )
    )
  )

/**
 * Says which database `serve` runs on, and whether this start created it (`store.created`, a new empty
 * database: a first start — or a `storage` setting that points at the wrong database, or a restore
 * into an empty one, where the gateway would otherwise start as a new deployment without a word) or
 * opened an existing one (`store.opened`, with when it was created); then takes the instance lock.
 */
export const servingStoreLayer = (storage: StorageConfig) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const { where, kind, opened } = yield* Store
      const fields = { store: where, kind, created_at: opened.createdAt ?? "unknown" }
      yield* opened.created
        ? Effect.logWarning("store.created").pipe(Effect.annotateLogs({ event: "store.created", ...fields }))
        : Effect.logInfo("store.opened").pipe(Effect.annotateLogs({ event: "store.opened", ...fields }))
      yield* instanceLock(storage)
    })
  )
