/**
 * The authorization server's repositories on SQLite and PostgreSQL: refresh rotation decided by one
 * conditional UPDATE, and the session check's cache invalidated by every revoking write.
 */
import { randomBytes, scryptSync } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, Deferred, Effect, Fiber, Layer, Option, Redacted, TestClock } from "effect"
import { authRepositories } from "../../src/auth/layer.js"
import { SessionMaintenance } from "../../src/auth/maintenance.js"
import { SessionGuardLive } from "../../src/auth/session-guard.js"
import { SessionGuard } from "../../src/bearer/caller.js"
import { LocalAccounts } from "../../src/identity/local/accounts.js"
import { totpAt } from "../../src/identity/local/totp.js"
import { StoreHealth } from "../../src/store/health.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { RefreshTokenRepo } from "../../src/store/refresh-tokens.js"
import { SESSION_CACHE_TTL_MS, SessionCache } from "../../src/store/session-cache.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { toStoredTimestamp } from "../../src/store/timestamp.js"
import { UserRepo } from "../../src/store/users.js"
import { storeKinds, testStoreLayer } from "../support/databases.js"

const layerFor = (kind: (typeof storeKinds)[number]) =>
  SessionGuardLive.pipe(Layer.provideMerge(authRepositories), Layer.provideMerge(testStoreLayer(kind)))

const arrange = Effect.gen(function* () {
  const now = new Date(yield* Clock.currentTimeMillis)
  const userId = yield* (yield* UserRepo).insertLocal({
    kind: "local",
    username: `u${randomBytes(4).toString("hex")}`,
    displayName: "U",
    at: now
  })
  const id = randomBytes(16).toString("base64url")
  yield* (yield* SessionRepo).insert({
    id,
    userId,
    clientId: "cli",
    scope: "offline_access",
    resource: "https://gw.example.com/mcp",
    authTime: now,
    createdAt: now,
    expiresAt: new Date(now.getTime() + 8 * 3600_000)
  })
  const caller = {
    issuer: "https://gw.example.com/sso",
    subject: userId,
    scopes: new Set<string>(),
    clientId: "cli",
    sessionId: id,
    tokenId: "j",
    expiresAt: 0
  }
  return { userId, sessionId: id, caller, now }
})

const outcome = (effect: Effect.Effect<void, { readonly reason: string }>) =>
  Effect.match(effect, { onFailure: (error) => error.reason, onSuccess: () => "admitted" })

describe.each(storeKinds)("authorization repositories (%s)", (kind) => {
  it.scoped("RefreshTokenRepo.rotate: of ten concurrent rotations of one token exactly one wins", () =>
    Effect.gen(function* () {
      const { sessionId, now } = yield* arrange
      const repo = yield* RefreshTokenRepo
      yield* repo.insert("old-hash", sessionId, now)
      const results = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, index) => `new-hash-${index}`),
        (next) => repo.rotate("old-hash", next, now),
        { concurrency: "unbounded" }
      )
      expect(results.filter((result) => result._tag === "Rotated")).toHaveLength(1)
      expect(results.filter((result) => result._tag === "Reused")).toHaveLength(9)
      expect(yield* repo.rotate("never-issued", "x", now)).toEqual({ _tag: "Unknown" })
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT token_hash FROM refresh_tokens ORDER BY token_hash`
      // Only hashes are stored, and only the winner's successor was inserted.
      expect(rows).toHaveLength(2)
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("SessionGuard: revoking or disabling denies the next check; re-enabling admits again", () =>
    Effect.gen(function* () {
      const { userId, sessionId, caller, now } = yield* arrange
      const guard = yield* SessionGuard
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      yield* (yield* UserRepo).setStatus(userId, "disabled", now)
      expect(yield* outcome(guard.check(caller))).toBe("the user is not enabled")
      yield* (yield* UserRepo).setStatus(userId, "enabled", now)
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      expect(yield* outcome(guard.check({ ...caller, subject: "someone-else" }))).toBe(
        "the session belongs to another user"
      )
      expect(yield* outcome(guard.check({ ...caller, clientId: "other" }))).toBe(
        "the session belongs to another client"
      )
      expect(yield* outcome(guard.check({ ...caller, sessionId: undefined }))).toBe("the token names no session")
      expect(yield* outcome(guard.check({ ...caller, sessionId: "unknown" }))).toBe("unknown session")
      expect(yield* (yield* SessionRepo).revoke(sessionId, "grant_revoked", now)).toBe(1)
      expect(yield* outcome(guard.check(caller))).toBe("the session was revoked")
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("SessionGuard.checkNow admits from the cache alone, and only what check admits", () =>
    Effect.gen(function* () {
      const { userId, sessionId, caller, now } = yield* arrange
      const guard = yield* SessionGuard
      const at = now.getTime()
      // Nothing cached yet: "ask check", whatever the session's state.
      expect(guard.checkNow(caller, at)).toBe(false)
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      expect(guard.checkNow(caller, at)).toBe(true)
      // Each of check's refusals, from the same cached rows.
      expect(guard.checkNow({ ...caller, subject: "someone-else" }, at)).toBe(false)
      expect(guard.checkNow({ ...caller, clientId: "other" }, at)).toBe(false)
      expect(guard.checkNow({ ...caller, sessionId: undefined }, at)).toBe(false)
      expect(guard.checkNow({ ...caller, sessionId: "unknown" }, at)).toBe(false)
      // The cache's 5 seconds are counted from the time the check ran.
      expect(guard.checkNow(caller, at + 4_999)).toBe(true)
      expect(guard.checkNow(caller, at + 5_000)).toBe(false)
      // After an invalidation a key is cached again only once SESSION_CACHE_TTL_MS have passed (the
      // invalidating write may not have committed before): `settled` lets them pass, and says when it is.
      let t = at
      const settled = Effect.as(TestClock.adjust(SESSION_CACHE_TTL_MS), undefined).pipe(
        Effect.tap(() => {
          t += SESSION_CACHE_TTL_MS
        })
      )
      // A session that ends within those 5 seconds is not admitted from the cache once it has ended.
      const sql = yield* SqlClient.SqlClient
      yield* settled
      yield* sql`UPDATE sessions SET expires_at = ${toStoredTimestamp(new Date(t + 2_000))} WHERE id = ${sessionId}`
      yield* (yield* SessionCache).forgetSessions([sessionId])
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      // Just invalidated: read from the store, not cached.
      expect(guard.checkNow(caller, t)).toBe(false)
      yield* settled
      yield* sql`UPDATE sessions SET expires_at = ${toStoredTimestamp(new Date(t + 2_000))} WHERE id = ${sessionId}`
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      expect(guard.checkNow(caller, t + 1_999)).toBe(true)
      expect(guard.checkNow(caller, t + 2_000)).toBe(false)
      yield* sql`UPDATE sessions SET expires_at = ${toStoredTimestamp(new Date(t + 8 * 3600_000))} WHERE id = ${sessionId}`
      yield* (yield* SessionCache).forgetSessions([sessionId])
      yield* settled
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      // Disabling and revoking write through the cache: the next checkNow no longer admits.
      yield* (yield* UserRepo).setStatus(userId, "disabled", now)
      expect(guard.checkNow(caller, t)).toBe(false)
      expect(yield* outcome(guard.check(caller))).toBe("the user is not enabled")
      expect(guard.checkNow(caller, t)).toBe(false)
      yield* (yield* UserRepo).setStatus(userId, "enabled", now)
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      yield* settled
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      expect(guard.checkNow(caller, t)).toBe(true)
      expect(yield* (yield* SessionRepo).revoke(sessionId, "grant_revoked", now)).toBe(1)
      expect(guard.checkNow(caller, t)).toBe(false)
      expect(yield* outcome(guard.check(caller))).toBe("the session was revoked")
      expect(guard.checkNow(caller, t)).toBe(false)
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("SessionMaintenance deletes sessions a day after they ended, with their refresh tokens", () =>
    Effect.gen(function* () {
      const { sessionId, now } = yield* arrange
      yield* (yield* RefreshTokenRepo).insert("hash", sessionId, now)
      yield* Layer.launch(SessionMaintenance.pipe(Layer.provide(StoreHealth.Default))).pipe(Effect.forkScoped)
      const sql = yield* SqlClient.SqlClient
      const count = Effect.map(sql`SELECT id FROM sessions`, (rows) => rows.length)
      // The sweep's queries take real time: before the clock moves, and before a count, wait (in real
      // time) until the sweep is asleep again, so the clock never moves past a sweep still running.
      const asleep = TestClock.sleeps().pipe(
        Effect.tap(() => Effect.promise(() => new Promise((done) => setTimeout(done, 10)))),
        Effect.repeat({ until: (sleeps) => Chunk.isNonEmpty(sleeps), times: 1_000 })
      )
      yield* asleep
      // The session ends 8 hours after `now`; the hourly sweep removes it once it ended 24 hours ago.
      yield* TestClock.adjust("32 hours")
      yield* asleep
      expect(yield* count).toBe(1)
      yield* TestClock.adjust("1 hour")
      yield* asleep
      expect(yield* count).toBe(0)
      expect(yield* sql`SELECT token_hash FROM refresh_tokens`).toEqual([])
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("SessionGuard: a write by another process (init-admin --reset) applies within 5 seconds", () =>
    Effect.gen(function* () {
      const { sessionId, caller } = yield* arrange
      const guard = yield* SessionGuard
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE sessions SET revoked_at = created_at, revoked_reason = 'administrator_reset' WHERE id = ${sessionId}`
      expect(yield* outcome(guard.check(caller))).toBe("admitted")
      yield* TestClock.adjust("5 seconds")
      expect(yield* outcome(guard.check(caller))).toBe("the session was revoked")
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("SessionGuard: a revocation landing between the session read and the cache store is not hidden", () =>
    Effect.gen(function* () {
      const { sessionId, caller, now } = yield* arrange
      const cache = yield* SessionCache
      const sessions = yield* SessionRepo
      const read = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      // A check that has read the live row and is about to cache it…
      const loading = yield* cache
        .session(
          sessionId,
          sessions.find(sessionId).pipe(
            Effect.map((row) => ({
              userId: Option.getOrThrow(row).user_id,
              clientId: Option.getOrThrow(row).client_id,
              expiresAt: Option.getOrThrow(row).expires_at.getTime(),
              revoked: Option.getOrThrow(row).revoked_at !== null
            })),
            Effect.zipLeft(Deferred.succeed(read, undefined)),
            Effect.zipLeft(Deferred.await(gate))
          )
        )
        .pipe(Effect.fork)
      yield* Deferred.await(read)
      // …while the session is revoked; then it finishes.
      expect(yield* sessions.revoke(sessionId, "grant_revoked", now)).toBe(1)
      yield* Deferred.succeed(gate, undefined)
      expect((yield* Fiber.join(loading))?.revoked).toBe(false)
      expect(yield* outcome((yield* SessionGuard).check(caller))).toBe("the session was revoked")
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("a password hashed with older scrypt parameters is rehashed at the sign-in that proves it", () =>
    Effect.gen(function* () {
      const { userId, now } = yield* arrange
      const credentials = yield* LocalCredentialRepo
      const users = yield* UserRepo
      const username = Option.getOrThrow(yield* users.findById(userId)).username!
      const password = Redacted.make("correct horse battery")
      // A hash as an earlier release made it (p = 1), by hand: same format, cheaper parameters.
      const salt = randomBytes(16)
      const key = scryptSync("correct horse battery", salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })
      const old = `scrypt$15$8$1$${salt.toString("base64url")}$${key.toString("base64url")}`
      yield* credentials.setPassword(userId, old, now)
      const changedAt = Option.getOrThrow(yield* credentials.find(userId)).password_changed_at
      const accounts = yield* LocalAccounts
      // A wrong password rehashes nothing.
      expect(Option.isNone(yield* accounts.checkPassword(username, Redacted.make("wrong password!")))).toBe(true)
      expect(Option.getOrThrow(yield* credentials.find(userId)).password_hash).toBe(old)
      expect(Option.isSome(yield* accounts.checkPassword(username, password))).toBe(true)
      const row = Option.getOrThrow(yield* credentials.find(userId))
      expect(row.password_hash).toMatch(/^scrypt\$15\$8\$3\$/)
      expect(row.password_changed_at).toEqual(changedAt)
      expect(Option.isSome(yield* accounts.checkPassword(username, password))).toBe(true)
      // A password changed meanwhile is never overwritten by a late rehash.
      expect(yield* credentials.rehashPassword(userId, old, "scrypt$15$8$3$x$y")).toBe(false)
      // A rehash that cannot be written (a busy database) does not fail the sign-in; the old hash stays.
      yield* credentials.setPassword(userId, old, now)
      const failingWrites = Layer.succeed(
        LocalCredentialRepo,
        LocalCredentialRepo.make({ ...credentials, rehashPassword: () => Effect.die(new Error("database is locked")) })
      )
      const signedIn = yield* Effect.flatMap(LocalAccounts, (local) => local.checkPassword(username, password)).pipe(
        Effect.provide(LocalAccounts.Default.pipe(Layer.provide(failingWrites)))
      )
      expect(Option.isSome(signedIn)).toBe(true)
      expect(Option.getOrThrow(yield* credentials.find(userId)).password_hash).toBe(old)
    }).pipe(Effect.provide(LocalAccounts.Default.pipe(Layer.provideMerge(layerFor(kind)))))
  )

  it.scoped("TOTP enrollment never replaces an enrolled second factor; only clearing it allows a new one", () =>
    Effect.gen(function* () {
      const { userId, now } = yield* arrange
      const credentials = yield* LocalCredentialRepo
      yield* credentials.setPassword(userId, "scrypt$15$8$3$x$y", now)
      const accounts = yield* LocalAccounts
      const first = new Uint8Array(20).fill(1)
      const second = new Uint8Array(20).fill(2)
      const at = now.getTime()
      expect(yield* accounts.confirmEnrollment(userId, first, totpAt(first, at))).toBe(true)
      const enrolled = Option.getOrThrow(yield* credentials.find(userId)).totp_secret_sealed
      // A second enrollment (a racing tab, or anyone past the password step) is refused and changes nothing.
      expect(yield* accounts.confirmEnrollment(userId, second, totpAt(second, at))).toBe(false)
      expect(yield* credentials.enrollTotp(userId, "sealed-by-someone-else", 1)).toBe(false)
      expect(Option.getOrThrow(yield* credentials.find(userId)).totp_secret_sealed).toBe(enrolled)
      yield* TestClock.adjust("30 seconds")
      expect(yield* accounts.checkTotp(userId, totpAt(first, at + 30_000))).toBe(true)

      yield* credentials.clearTotp(userId)
      expect(yield* accounts.confirmEnrollment(userId, second, totpAt(second, at + 30_000))).toBe(true)
      yield* TestClock.adjust("30 seconds")
      expect(yield* accounts.checkTotp(userId, totpAt(second, at + 60_000))).toBe(true)
    }).pipe(Effect.provide(LocalAccounts.Default.pipe(Layer.provideMerge(layerFor(kind)))))
  )
})
