/**
 * docs/operations.md, "When the database goes away": which failures mean the store is unavailable
 * (decided once, from the drivers' real errors), and how an outage is logged and ends (StoreHealth).
 * The whole path through a spawned gateway is test/runtime/store-outage.test.ts.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Layer, Redacted, TestClock } from "effect"
import { CHECK_EVERY_OUTAGE, OUTAGE_LOG_INTERVAL, RECOVERY_QUIET, StoreHealth } from "../../src/store/health.js"
import { PREPARE_CACHE_TTL } from "../../src/store/sqlite.js"
import { unavailableCause } from "../../src/store/unavailable.js"
import { type StoreKindUnderTest, storeKinds, testStoreLayer, withStorage, withTempDir } from "../support/databases.js"
import { freePort } from "../support/gateway-process.js"
import { LogCapture } from "../support/logs.js"

/** The reason the failure of `effect` gives, or "not unavailable" / "succeeded". */
const reasonOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(Effect.orDie(effect)), (exit) =>
    Exit.isSuccess(exit) ? "succeeded" : (unavailableCause(exit.cause) ?? "not unavailable")
  )

describe("which failures mean the store is unavailable", () => {
  it.live("PostgreSQL: a refused connection and an administrator's termination do; a bad statement does not", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const refused = yield* reasonOf(
        Effect.scoped(Layer.build(PgClient.layer({ url: Redacted.make(`postgres://postgres@127.0.0.1:${port}/x`) })))
      )
      expect(refused).toBe("connection ECONNREFUSED")

      yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        expect(yield* reasonOf(sql`SELECT nonsense FROM nowhere`)).toBe("not unavailable")
        expect(yield* reasonOf(sql`SELECT 1/0`)).toBe("not unavailable")
        // The server ends the session as a restart or failover does (57P01 admin_shutdown).
        expect(yield* reasonOf(sql`SELECT pg_terminate_backend(pg_backend_pid())`)).toMatch(
          /^postgres (57P01|connection terminated)$/
        )
      }).pipe(Effect.provide(testStoreLayer("postgres")))
    })
  )

  it.scoped(
    "SQLite: a file locked past the busy timeout or read-only does; a constraint or a bad statement does not",
    () =>
      Effect.gen(function* () {
        const dir = yield* withTempDir
        // Rollback journal, not WAL: a writer's exclusive lock keeps readers out too. The store's
        // prepared-statement lifetime, which bounds how long a failed preparation is kept.
        const open = (readonly = false) =>
          Layer.build(
            SqliteClient.layer({
              filename: `${dir}/gateway.db`,
              disableWAL: true,
              readonly,
              prepareCacheTTL: PREPARE_CACHE_TTL
            })
          ).pipe(Effect.map(clientOf))
        const writable = yield* open()
        yield* writable`CREATE TABLE t (id INTEGER PRIMARY KEY)`
        yield* writable`INSERT INTO t (id) VALUES (1)`
        expect(yield* reasonOf(writable`INSERT INTO t (id) VALUES (1)`)).toBe("not unavailable")
        expect(yield* reasonOf(writable`SELECT nonsense FROM nowhere`)).toBe("not unavailable")

        const readOnly = yield* open(true)
        expect(yield* reasonOf(readOnly`INSERT INTO t (id) VALUES (2)`)).toBe("sqlite SQLITE_READONLY")

        // Another connection holds the file's exclusive lock (rollback journal: readers wait too).
        const other = yield* open()
        yield* other`PRAGMA busy_timeout = 0`
        yield* writable`BEGIN EXCLUSIVE`
        expect(yield* reasonOf(other`SELECT id FROM t`)).toBe("sqlite SQLITE_BUSY")
        yield* writable`ROLLBACK`
        // The statement's preparation failed under the lock; it is prepared again, not failed for minutes.
        yield* TestClock.adjust(Duration.sum(PREPARE_CACHE_TTL, Duration.millis(1)))
        expect(yield* reasonOf(other`SELECT id FROM t`)).toBe("succeeded")
      })
  )

  it("a failure that is not the store's, or an interruption, is not", () => {
    expect(unavailableCause(Cause.die(new Error("boom")))).toBeUndefined()
    // A refused connection that is not the store's (a backend, an identity provider) is not an outage.
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" })
    expect(unavailableCause(Cause.die(refused))).toBeUndefined()
    expect(unavailableCause(Cause.die(new Error("fetch failed", { cause: refused })))).toBeUndefined()
    expect(unavailableCause(Cause.die(new SqlError({ cause: refused, message: "query failed" })))).toBe(
      "connection ECONNREFUSED"
    )
    expect(unavailableCause(Cause.interrupt(undefined as never))).toBeUndefined()
    expect(unavailableCause(Cause.fail({ code: "invalid_grant" }))).toBeUndefined()
  })
})

const clientOf = (context: Context.Context<SqlClient.SqlClient>) => Context.get(context, SqlClient.SqlClient)

/**
 * Moves the test clock one check interval at a time until the outage is over: the check's query is real
 * I/O (PostgreSQL answers over a socket), which the test clock does not wait for.
 */
const untilRecovered = (health: StoreHealth) =>
  Effect.gen(function* () {
    for (let round = 0; round < 200 && !health.ready(); round++) {
      yield* TestClock.adjust(CHECK_EVERY_OUTAGE)
      yield* Effect.promise(() => new Promise((done) => setTimeout(done, 5)))
    }
  })

/**
 * A database of `kind` that stops answering StoreHealth's check when `breakIt` runs, until `heal`:
 * SQLite through another connection holding the file's exclusive lock (rollback journal, no busy
 * timeout: SQLITE_BUSY at once), PostgreSQL by moving the table the check reads away and back.
 */
const breakableStore = (kind: StoreKindUnderTest) =>
  Effect.gen(function* () {
    const storage = yield* withStorage(kind)
    if (storage.type === "sqlite") {
      const open = () => Layer.build(SqliteClient.layer({ filename: storage.path, disableWAL: true }))
      const checked = yield* open()
      const sql = clientOf(checked)
      yield* sql`CREATE TABLE gateway_meta (id INTEGER)`
      yield* sql`PRAGMA busy_timeout = 0`
      const other = clientOf(yield* open())
      return { layer: Layer.succeedContext(checked), breakIt: other`BEGIN EXCLUSIVE`, heal: other`ROLLBACK` }
    }
    const checked = yield* Layer.build(PgClient.layer({ url: storage.url }))
    const sql = clientOf(checked)
    yield* sql`CREATE TABLE gateway_meta (id INTEGER)`
    return {
      layer: Layer.succeedContext(checked),
      breakIt: sql`ALTER TABLE gateway_meta RENAME TO gateway_meta_away`,
      heal: sql`ALTER TABLE gateway_meta_away RENAME TO gateway_meta`
    }
  }).pipe(Effect.orDie)

describe.each(storeKinds)("StoreHealth (%s)", (kind) => {
  it.scoped("an outage writes one line when it starts, one per interval with the count, one when it ends", () =>
    Effect.gen(function* () {
      const store = yield* breakableStore(kind)
      const logs = new LogCapture()
      yield* logs.capture(
        Effect.gen(function* () {
          const health = yield* StoreHealth
          expect(health.ready()).toBe(true)
          yield* health.failed("connection ECONNREFUSED")
          expect(health.ready()).toBe(false)
          // The first failure woke the check; it succeeded, but a failure came after the check before it.
          yield* Effect.promise(() => new Promise((done) => setTimeout(done, 50)))
          expect(health.ready()).toBe(false)
          yield* Effect.orDie(store.breakIt)
          for (let request = 0; request < 10; request++) yield* health.failed("postgres 57P03")
          // 35 s in which every check fails too (every 100 ms; fewer on PostgreSQL, whose answers take real time).
          yield* TestClock.adjust(Duration.sum(OUTAGE_LOG_INTERVAL, Duration.seconds(5)))
          yield* Effect.promise(() => new Promise((done) => setTimeout(done, 50)))
          expect(health.ready()).toBe(false)
          yield* Effect.orDie(store.heal)
          yield* untilRecovered(health)
          expect(health.ready()).toBe(true)
        }).pipe(Effect.provide(StoreHealth.Default.pipe(Layer.provideMerge(store.layer))))
      )
      const lines = logs.entries.filter((entry) => String(entry["event"]).startsWith("store."))
      const checkReason = kind === "sqlite" ? "sqlite SQLITE_BUSY" : "check failed"
      expect(lines).toMatchObject([
        { event: "store.unavailable", level: "error", reason: "connection ECONNREFUSED" },
        { event: "store.unavailable", level: "error", reason: checkReason, failures_not_logged: expect.any(Number) },
        { event: "store.recovered", level: "info", reason: checkReason, failures: expect.any(Number) }
      ])
      const [, interval, recovered] = lines
      expect(Number(interval?.["failures_not_logged"])).toBeGreaterThanOrEqual(10)
      expect(Number(interval?.["unavailable_ms"])).toBeGreaterThanOrEqual(30_000)
      expect(Number(recovered?.["failures"])).toBeGreaterThan(Number(interval?.["failures_not_logged"]))
      expect(Number(recovered?.["unavailable_ms"])).toBeGreaterThanOrEqual(35_000)
      if (kind === "sqlite") {
        // The ten requests' failures and every check's of the first 30 s (one every 100 ms), but the last.
        expect(interval?.["failures_not_logged"]).toBe(10 + 300 - 1)
      }
    })
  )

  it.scoped("a store that answers is ready, and an outage's first failure wakes the check at once", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      yield* logs.capture(
        Effect.gen(function* () {
          const health = yield* StoreHealth
          yield* health.failed("connection ECONNRESET")
          // The check runs without waiting out its 5 s; it succeeds, and RECOVERY_QUIET after the
          // request's failure the outage is over.
          yield* untilRecovered(health)
          expect(health.ready()).toBe(true)
          const recoveredAt = yield* TestClock.currentTimeMillis
          expect(recoveredAt).toBeGreaterThanOrEqual(Duration.toMillis(RECOVERY_QUIET))
          expect(recoveredAt).toBeLessThan(Duration.toMillis(RECOVERY_QUIET) + 1_000)
        }).pipe(Effect.provide(StoreHealth.Default.pipe(Layer.provide(testStoreLayer(kind)))))
      )
      expect(logs.entries.map((entry) => entry["event"])).toEqual(["store.unavailable", "store.recovered"])
    })
  )

  it.scoped("a store that reads but whose writes keep failing (a full disk) is one outage, out of readiness", () =>
    Effect.gen(function* () {
      const logs = new LogCapture()
      yield* logs.capture(
        Effect.gen(function* () {
          const health = yield* StoreHealth
          // Writes fail every 2 s while the check, a read, succeeds every 100 ms in between.
          for (let write = 0; write < 5; write++) {
            yield* health.failed("sqlite SQLITE_FULL")
            for (let step = 0; step < 20; step++) {
              yield* TestClock.adjust(CHECK_EVERY_OUTAGE)
              yield* Effect.promise(() => new Promise((done) => setTimeout(done, 2)))
              expect(health.ready()).toBe(false)
            }
          }
          yield* untilRecovered(health)
          expect(health.ready()).toBe(true)
        }).pipe(Effect.provide(StoreHealth.Default.pipe(Layer.provide(testStoreLayer(kind)))))
      )
      const lines = logs.entries.filter((entry) => String(entry["event"]).startsWith("store."))
      expect(lines).toMatchObject([
        { event: "store.unavailable", reason: "sqlite SQLITE_FULL" },
        { event: "store.recovered", reason: "sqlite SQLITE_FULL", failures: 5 }
      ])
    })
  )
})
