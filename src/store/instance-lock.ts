import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer } from "effect"
import { Store, StoreError } from "./store.js"

// Arbitrary constant, beside initialize.ts's: the lock of the one serving gateway per PostgreSQL database.
const INSTANCE_LOCK_ID = 7_466_100_011
/** How long a starting gateway waits for the one before it to stop (a restart's overlap). */
export const INSTANCE_WAIT = Duration.seconds(15)
const RETRY_EVERY = Duration.millis(500)

/**
 * One serving gateway per PostgreSQL database (docs/storage.md, "One instance per database"): `serve`
 * holds a session advisory lock on a connection of its own for as long as it runs. A second gateway
 * started on the database waits up to `INSTANCE_WAIT` for the first to stop (a restart whose old
 * process still drains), logging `store.instance_waiting` once, then refuses to start, naming why.
 * Two gateways on one database would each run the background workers (webhooks, the audit archive,
 * retention) and keep their own in-memory state (token caches, login throttles, policy), so their
 * answers would disagree. The commands that open the store for a moment (`init-admin`, `dev-token`)
 * take no lock. On SQLite none is taken (a file is one machine's; keep a second gateway off it,
 * docs/operations.md). A lock is lost with its connection (PostgreSQL restarted): the gateway keeps
 * serving, and this guard is for starts, not a fence.
 */
const instanceLock = Effect.gen(function* () {
  const { where } = yield* Store
  const sql = yield* SqlClient.SqlClient
  if (sql.onDialectOrElse({ pg: () => false, orElse: () => true })) return
  const connection = yield* sql.reserve
  const tryLock = connection
    .executeValues(`SELECT pg_try_advisory_lock(${INSTANCE_LOCK_ID})`, [])
    .pipe(Effect.map((rows) => rows[0]?.[0] === true))
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
export const servingStoreLayer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { where, kind, opened } = yield* Store
    const fields = { store: where, kind, created_at: opened.createdAt ?? "unknown" }
    yield* opened.created
      ? Effect.logWarning("store.created").pipe(Effect.annotateLogs({ event: "store.created", ...fields }))
      : Effect.logInfo("store.opened").pipe(Effect.annotateLogs({ event: "store.opened", ...fields }))
    yield* instanceLock
  })
)
