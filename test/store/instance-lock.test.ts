/**
 * One serving gateway per PostgreSQL database (src/store/instance-lock.ts, docs/storage.md): `serve`
 * says whether it created the database or opened an existing one, and holds an instance lock; a second
 * `serve` waits for it (a restart's overlap) and refuses to start when it does not come free.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Redacted, Scope, TestClock } from "effect"
import { INSTANCE_WAIT, servingStoreLayer } from "../../src/store/instance-lock.js"
import { randomConfigKey, storeLayer, withPostgres, withSqlite } from "../support/databases.js"
import { freePort, startGateway } from "../support/gateway-process.js"
import { LogCapture } from "../support/logs.js"

describe("the instance lock and the opening line", () => {
  it.scoped("PostgreSQL: a second gateway's start waits for the first, then is refused with the reason", () =>
    Effect.gen(function* () {
      const url = yield* withPostgres
      const key = randomConfigKey()
      const store = storeLayer({ type: "postgres", url }, key)
      const logs = new LogCapture()
      const first = yield* Scope.make()
      yield* logs.capture(Layer.buildWithScope(servingStoreLayer.pipe(Layer.provide(store)), first))
      const second = yield* Effect.fork(
        logs.capture(Effect.scoped(Layer.build(servingStoreLayer.pipe(Layer.provide(store)))))
      )
      // Past the wait on the test clock (the lock's retries every 500 ms run meanwhile).
      for (let step = 0; step < 40; step++) {
        yield* TestClock.adjust("500 millis")
        yield* Effect.promise(() => new Promise((done) => setTimeout(done, 5)))
      }
      const refused = yield* Effect.exit(second.await.pipe(Effect.flatten))
      expect(Exit.isFailure(refused)).toBe(true)
      expect(String(Exit.isFailure(refused) ? refused.cause : "")).toContain("is in use by another gateway")
      const events = logs.entries.map((entry) => entry["event"])
      // The first start created the database; the second opened it, and waited.
      expect(events).toEqual(["store.created", "store.opened", "store.instance_waiting"])
      expect(logs.entries[2]).toMatchObject({ wait_seconds: Duration.toSeconds(INSTANCE_WAIT) })
      expect(JSON.stringify(logs.entries)).not.toContain(Redacted.value(url).split("@")[0])
      // Once the first lets go, the next start takes the lock at once.
      yield* Scope.close(first, Exit.void)
      yield* Effect.scoped(Layer.build(servingStoreLayer.pipe(Layer.provide(store))))
    })
  )

  it.scoped("SQLite: no lock; the opening line says created, then opened with the creation time", () =>
    Effect.gen(function* () {
      const path = yield* withSqlite
      const key = randomConfigKey()
      const logs = new LogCapture()
      const open = logs.capture(
        Effect.scoped(Layer.build(servingStoreLayer.pipe(Layer.provide(storeLayer({ type: "sqlite", path }, key)))))
      )
      yield* open
      yield* open
      expect(logs.entries).toMatchObject([
        { event: "store.created", level: "warn", store: `SQLite database ${path}`, kind: "sqlite" },
        { event: "store.opened", level: "info", created_at: logs.entries[0]?.["created_at"] }
      ])
    })
  )
})

describe("a restart's overlap", () => {
  it.live("a gateway started while the old one still runs on the database serves once the old one stops", () =>
    Effect.gen(function* () {
      const url = Redacted.value(yield* withPostgres)
      const configKey = randomConfigKey()
      const keyText = Buffer.from(Redacted.value(configKey)).toString("base64")
      const start = (port: number) =>
        startGateway({
          port,
          env: { GATEWAY_CONFIG_KEY: keyText },
          config: () =>
            [
              `server: { listen: 127.0.0.1:${port}, public_url: http://127.0.0.1:${port}/mcp }`,
              `auth: { issuer: http://127.0.0.1:${port}/sso }`,
              `storage: { type: postgres, url: "${url}" }`,
              ""
            ].join("\n")
        })
      const old = yield* Effect.promise(async () => start(await freePort()))
      expect(old.stderr()).toContain('"event":"store.created"')
      const next = start(yield* Effect.promise(() => freePort()))
      yield* Effect.promise(() => new Promise((done) => setTimeout(done, 2_000)))
      yield* Effect.promise(() => old.stop())
      const serving = yield* Effect.promise(() => next)
      expect(serving.stderr()).toContain('"event":"store.instance_waiting"')
      expect(serving.stderr()).toContain('"event":"store.opened"')
      yield* Effect.promise(() => serving.stop())
    }).pipe(Effect.scoped)
  )
})
