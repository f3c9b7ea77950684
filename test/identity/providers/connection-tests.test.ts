/**
 * docs/enterprise-sign-in.md, "Trying a connection" — a connection test's start link works once, its
 * provider answer is taken once, and its result lasts 5 minutes, for its owner, at the settings
 * revision it started from (TestClock).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted, TestClock } from "effect"
import { CONNECTION_TEST_TTL_MS, ConnectionTests } from "../../../src/identity/providers/connection-tests.js"
import { connectionOf } from "../../../src/identity/upstream/connection.js"
import { newAttempt } from "../../../src/identity/upstream/flow.js"

const connection = connectionOf(
  {
    protocol: "oidc",
    issuer: "https://login.example.com",
    client_id: "gateway",
    client_secret_env: "X",
    token_auth_method: "client_secret_basic",
    scopes: ["openid"]
  },
  Redacted.make("secret"),
  undefined
)

describe("ConnectionTests", () => {
  it.effect("one-use start, one-time state, owner-only result that ends after 5 minutes or at another revision", () =>
    Effect.gen(function* () {
      const tests = yield* ConnectionTests
      const test = yield* tests.open("admin-1", 3, connection)
      const token = test.startToken!
      expect(Option.isNone(yield* tests.redeemStart(test.id, "wrong-token"))).toBe(true)
      expect(Option.isSome(yield* tests.redeemStart(test.id, token))).toBe(true)
      expect(Option.isNone(yield* tests.redeemStart(test.id, token))).toBe(true)

      const attempt = newAttempt(connection.namespace, undefined)
      yield* tests.waitFor(test, attempt)
      expect(Option.isSome(yield* tests.takeByState(attempt.state))).toBe(true)
      expect(Option.isNone(yield* tests.takeByState(attempt.state))).toBe(true)

      expect(Option.isSome(yield* tests.resultFor(test.id, "admin-1", 3))).toBe(true)
      expect(Option.isNone(yield* tests.resultFor(test.id, "admin-2", 3))).toBe(true)
      expect(Option.isNone(yield* tests.resultFor(test.id, "admin-1", 4))).toBe(true)
      yield* TestClock.adjust(CONNECTION_TEST_TTL_MS - 1)
      expect(Option.isSome(yield* tests.resultFor(test.id, "admin-1", 3))).toBe(true)
      yield* TestClock.adjust(1)
      expect(Option.isNone(yield* tests.resultFor(test.id, "admin-1", 3))).toBe(true)
    }).pipe(Effect.provide(ConnectionTests.Default))
  )
})
