/**
 * What `gateway validate` says about managed storage (src/sources/initialized-probe.ts): a database the
 * gateway has not created yet is "not initialized" (no note), a store that does not answer is "cannot
 * tell" in fixed words — never a driver's message or a password.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import type { GatewayConfig } from "../../src/config/schema.js"
import { probeManagedState } from "../../src/sources/initialized-probe.js"
import { withPostgres, withTempDir } from "../support/databases.js"
import { freePort } from "../support/gateway-process.js"

const probe = (storage: GatewayConfig["storage"]) => probeManagedState({ storage } as GatewayConfig)

describe("the managed-storage probe of gateway validate", () => {
  it.scoped("an empty database or file, as at a first install, is not initialized", () =>
    Effect.gen(function* () {
      expect(yield* probe({ type: "postgres", url: yield* withPostgres })).toBe("not_initialized")
      const path = join(yield* withTempDir, "empty.db")
      writeFileSync(path, "")
      expect(yield* probe({ type: "sqlite", path })).toBe("not_initialized")
    })
  )

  it.live("a database that does not answer is 'cannot tell', in fixed words without the password", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(() => freePort())
      const state = yield* probe({
        type: "postgres",
        url: Redacted.make(`postgres://gateway:s3cret-pass@127.0.0.1:${port}/gateway`)
      })
      expect(state).toEqual({ unknown: "the store did not answer: connection ECONNREFUSED" })
    })
  )
})
