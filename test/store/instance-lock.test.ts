/**
 * One serving gateway per database (src/store/instance-lock.ts, docs/storage.md): `serve` says whether
 * it created the database or opened an existing one, and holds an instance lock (PostgreSQL: an advisory
 * lock; SQLite: an exclusive transaction on `<path>.lock`); a second `serve` waits for it (a restart's
 * overlap) and refuses to start when it does not come free.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Redacted, Scope, TestClock } from "effect"
import { INSTANCE_WAIT, servingStoreLayer } from "../../src/store/instance-lock.js"
import { randomConfigKey, storeKinds, storeLayer, withStorage } from "../support/databases.js"
import { freePort, startGateway } from "../support/gateway-process.js"
import { LogCapture } from "../support/logs.js"

describe.each(storeKinds)("the instance lock and the opening line (%s)", (kind) => {
  it.scoped("a second gateway's start waits for the first, then is refused with the reason; once free, it starts", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const key = randomConfigKey()
      const serving = servingStoreLayer(storage).pipe(Layer.provide(storeLayer(storage, key)))
      const logs = new LogCapture()
      const first = yield* Scope.make()
      yield* logs.capture(Layer.buildWithScope(serving, first))
      const second = yield* Effect.fork(logs.capture(Effect.scoped(Layer.build(serving))))
      // Past the wait on the test clock (the lock's retries every 500 ms run meanwhile).
      for (let step = 0; step < 40; step++) {
        yield* TestClock.adjust("500 millis")
        yield* Effect.promise(() => new Promise((done) => setTimeout(done, 5)))
      }
      const refused = yield* Effect.exit(second.await.pipe(Effect.flatten))
      expect(Exit.isFailure(refused)).toBe(true)
      expect(String(Exit.isFailure(refused) ? refused.cause : "")).toContain("is in use by another gateway")
      // The first start created the database; the second opened it, and waited.
      expect(logs.entries.map((entry) => entry["event"])).toEqual([
        "store.created",
        "store.opened",
        "store.instance_waiting"
      ])
      expect(logs.entries[0]).toMatchObject({ level: "warn", kind })
      expect(logs.entries[1]).toMatchObject({ level: "info", created_at: logs.entries[0]?.["created_at"] })
      expect(logs.entries[2]).toMatchObject({ wait_seconds: Duration.toSeconds(INSTANCE_WAIT) })
      if (storage.type === "postgres") {
        expect(JSON.stringify(logs.entries)).not.toContain(Redacted.value(storage.url).split("@")[0])
      }
      // Once the first lets go, the next start takes the lock at once.
      yield* Scope.close(first, Exit.void)
      yield* Effect.scoped(Layer.build(serving))
    })
  )
})

describe.each(storeKinds)("a restart's overlap (%s)", (kind) => {
  it.live("a gateway started while the old one still runs on the database serves once the old one stops", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const storageYaml =
        storage.type === "sqlite"
          ? `storage: { type: sqlite, path: "${storage.path}" }`
          : `storage: { type: postgres, url: "${Redacted.value(storage.url)}" }`
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
              storageYaml,
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
