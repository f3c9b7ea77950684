import { randomBytes } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import { makeFailureWindow } from "../../auth/throttle.js"
import { constantTimeEqual, sha256Hex } from "../../crypto/hashing.js"
import type { UpstreamIdentity } from "../upstream/claims.js"
import type { UpstreamConnection } from "../upstream/connection.js"
import type { UpstreamAttempt } from "../upstream/flow.js"

/** Spec Limits: a connection test's result lives 5 minutes (and ends on a save or a restart). */
export const CONNECTION_TEST_TTL_MS = 5 * 60 * 1000
/** Open tests at once; the oldest goes first past it. */
const MAX_TESTS = 100
/**
 * Directory sign-in tests whose password or name the directory refused, per 15 minutes
 * (docs/enterprise-sign-in.md, "Trying a connection"): per administrator and tested name, and per
 * administrator over all names. The test is an administrator's tool, not a way to guess a person's
 * password, nor to run a directory's own lockout on someone.
 */
export const LDAP_TEST_NAME_LIMIT = 5
export const LDAP_TEST_ADMIN_LIMIT = 20

/** The outcomes of a directory sign-in test that tell something about a password or a name. */
const GUESSES: ReadonlySet<string> = new Set(["invalid_credentials", "no_such_user"])

/** A directory sign-in test allowed to run; `done` with its outcome counts it or takes it back. */
export interface LdapTestSlot {
  readonly done: (reason: string | undefined) => void
}

export type TestResult =
  | { readonly status: "waiting" }
  | { readonly status: "succeeded"; readonly identity: UpstreamIdentity }
  | { readonly status: "failed"; readonly reason: string; readonly check?: string; readonly detail?: string }

/** An OIDC connection test: a draft connection tried by an administrator's browser, never saved. */
export interface ConnectionTest {
  readonly id: string
  readonly ownerId: string
  /** The settings revision when it started: a save since invalidates it. */
  readonly revision: number
  readonly expiresAt: number
  readonly connection: UpstreamConnection
  /** The one-use token of its `start_url`; gone once used. */
  startToken: string | undefined
  attempt: UpstreamAttempt | undefined
  result: TestResult
}

const randomToken = () => randomBytes(32).toString("base64url")

/**
 * Connection tests in progress (docs/enterprise-sign-in.md, "Trying a connection"), in memory only: a
 * restart ends them. A test's `start_url` works once; its upstream `state` is answered once at
 * `/sso/callback`; its result is shown only to the administrator who started it, for 5 minutes.
 */
export class ConnectionTests extends Effect.Service<ConnectionTests>()("gateway/ConnectionTests", {
  sync: () => {
    const tests = new Map<string, ConnectionTest>()
    const byState = new Map<string, string>()
    const ldapByName = makeFailureWindow(LDAP_TEST_NAME_LIMIT)
    const ldapByAdmin = makeFailureWindow(LDAP_TEST_ADMIN_LIMIT)

    const sweep = (now: number) => {
      for (const [id, test] of tests) {
        if (test.expiresAt > now && tests.size <= MAX_TESTS) break
        tests.delete(id)
        if (test.attempt !== undefined) byState.delete(test.attempt.state)
      }
    }

    const open = Effect.fn("ConnectionTests.open")(function* (
      ownerId: string,
      revision: number,
      connection: UpstreamConnection
    ) {
      const now = yield* Clock.currentTimeMillis
      sweep(now)
      const test: ConnectionTest = {
        id: randomToken(),
        ownerId,
        revision,
        expiresAt: now + CONNECTION_TEST_TTL_MS,
        connection,
        startToken: randomToken(),
        attempt: undefined,
        result: { status: "waiting" }
      }
      tests.set(test.id, test)
      return test
    })

    const live = (id: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const test = tests.get(id)
        return test !== undefined && test.expiresAt > now ? Option.some(test) : Option.none<ConnectionTest>()
      })

    /** Uses a test's one-use start token; the test, if the token was its own and unused. */
    const redeemStart = (id: string, token: string) =>
      Effect.map(live(id), (found) => {
        if (Option.isNone(found)) return found
        const expected = found.value.startToken
        if (expected === undefined || !constantTimeEqual(expected, token)) return Option.none<ConnectionTest>()
        found.value.startToken = undefined
        return found
      })

    const waitFor = (test: ConnectionTest, attempt: UpstreamAttempt) =>
      Effect.sync(() => {
        test.attempt = attempt
        byState.set(attempt.state, test.id)
      })

    /** The test waiting for the upstream's answer with this `state`, taken out: answered once. */
    const takeByState = (state: string) =>
      Effect.gen(function* () {
        const id = byState.get(state)
        if (id === undefined) return Option.none<ConnectionTest>()
        byState.delete(state)
        return yield* live(id)
      })

    const finish = (test: ConnectionTest, result: TestResult) =>
      Effect.sync(() => {
        test.result = result
      })

    /** The result for its owner while the settings are still at the revision it started from. */
    const resultFor = (id: string, ownerId: string, revision: number) =>
      Effect.map(live(id), (found) =>
        Option.filter(found, (test) => test.ownerId === ownerId && test.revision === revision)
      )

    /**
     * Room for one directory sign-in test by `adminId` of `username`: the seconds to wait, or a slot.
     * Counted before it runs, in the same step as the check (so parallel tests cannot run past the
     * limit), and taken back when the directory's answer was not a refused password or name.
     */
    const startLdapTest = (adminId: string, username: string) =>
      Effect.map(Clock.currentTimeMillis, (now): { readonly wait: number } | LdapTestSlot => {
        // Hashed: the typed names (a mistyped password, perhaps) are not kept in memory for 15 minutes.
        const key = sha256Hex(`${adminId}\n${username.normalize("NFC").trim().toLowerCase()}`)
        const wait = Math.max(ldapByName.wait(key, now), ldapByAdmin.wait(adminId, now))
        if (wait > 0) return { wait }
        ldapByName.add(key, now)
        ldapByAdmin.add(adminId, now)
        return {
          done: (reason) => {
            if (reason !== undefined && GUESSES.has(reason)) return
            ldapByName.remove(key, now)
            ldapByAdmin.remove(adminId, now)
          }
        }
      })

    return { open, redeemStart, waitFor, takeByState, finish, resultFor, startLdapTest } as const
  }
}) {}

/** The API's view of a test (src/identity/providers/settings.ts, `TestRecord`). */
export const testRecord = (test: ConnectionTest) => {
  const base = { id: test.id, source: "oidc" as const, expires_at: new Date(test.expiresAt).toISOString() }
  const result = test.result
  switch (result.status) {
    case "waiting":
      return { ...base, status: "waiting" as const }
    case "failed":
      return {
        ...base,
        status: "failed" as const,
        reason: result.reason,
        ...(result.check === undefined ? {} : { check: result.check }),
        ...(result.detail === undefined ? {} : { detail: result.detail })
      }
    case "succeeded": {
      const { identity } = result
      return {
        ...base,
        status: "succeeded" as const,
        identity: {
          subject: identity.subject,
          name: identity.name ?? null,
          groups: identity.groups,
          departments: identity.departments,
          acr: identity.acr ?? null,
          auth_time: identity.authTime ?? null
        }
      }
    }
  }
}
