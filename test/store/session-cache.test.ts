/**
 * The session check's cache (docs/authorization-server.md, "Access token"): a value read before an
 * invalidation is never stored after it, even once the invalidation's own record has been dropped to
 * keep memory bounded.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { type CachedSession, SESSION_CACHE_TTL_MS, SessionCache } from "../../src/store/session-cache.js"

const live: CachedSession = { userId: "u", clientId: "cli", expiresAt: Number.MAX_SAFE_INTEGER, revoked: false }
const revoked: CachedSession = { ...live, revoked: true }

/** Starts a load of `id` that returns `live` once `gate` opens; resolves `read` when it has "queried". */
const pausedLoad = (cache: SessionCache, id: string) =>
  Effect.gen(function* () {
    const read = yield* Deferred.make<void>()
    const gate = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      cache.session(id, Effect.zipRight(Deferred.succeed(read, undefined), Effect.as(Deferred.await(gate), live)))
    )
    yield* Deferred.await(read)
    return { finish: Effect.zipRight(Deferred.succeed(gate, undefined), Fiber.join(fiber)) }
  })

/**
 * Session `id`, just invalidated: read from the store at every load (`live`, then `revoked`, each as
 * loaded) until `SESSION_CACHE_TTL_MS` have passed (`meanwhile` runs before they do), then cached again.
 */
const uncachedThenCached = (
  cache: SessionCache,
  id: string,
  meanwhile: () => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function* () {
    expect(yield* cache.session(id, Effect.succeed(live))).toEqual(live)
    expect(yield* cache.session(id, Effect.succeed(revoked))).toEqual(revoked)
    yield* meanwhile()
    yield* TestClock.adjust(SESSION_CACHE_TTL_MS)
    // Long committed: cached again.
    expect(yield* cache.session(id, Effect.succeed(revoked))).toEqual(revoked)
    expect(yield* cache.session(id, Effect.succeed(live))).toEqual(revoked)
  })

describe("SessionCache", () => {
  it.effect("caches a load nothing invalidated, and not one an invalidation overtook", () =>
    Effect.gen(function* () {
      const cache = yield* SessionCache
      expect(yield* cache.session("a", Effect.succeed(live))).toEqual(live)
      expect(yield* cache.session("a", Effect.succeed(revoked))).toEqual(live)

      const load = yield* pausedLoad(cache, "b")
      yield* cache.forgetSessions(["b"])
      expect(yield* load.finish).toEqual(live)
      expect(yield* cache.session("b", Effect.succeed(revoked))).toEqual(revoked)
    }).pipe(Effect.provide(SessionCache.Default))
  )

  it.effect("an invalidation on another key does not block caching", () =>
    Effect.gen(function* () {
      const cache = yield* SessionCache
      const load = yield* pausedLoad(cache, "c")
      yield* cache.forgetSessions(["other"])
      yield* load.finish
      expect(yield* cache.session("c", Effect.succeed(revoked))).toEqual(live)
    }).pipe(Effect.provide(SessionCache.Default))
  )

  it.effect("stays safe when the invalidation's record was dropped for memory", () =>
    Effect.gen(function* () {
      const cache = yield* SessionCache
      const load = yield* pausedLoad(cache, "d")
      yield* cache.forgetSessions(["d"])
      yield* cache.forgetSessions(Array.from({ length: 60_000 }, (_, index) => `flood${index}`))
      yield* load.finish
      expect(yield* cache.session("d", Effect.succeed(revoked))).toEqual(revoked)
    }).pipe(Effect.provide(SessionCache.Default))
  )

  it.effect(
    "for its time to live after an invalidation, a key is read from the store every time: the write that invalidated it may not have committed yet",
    () =>
      Effect.gen(function* () {
        const cache = yield* SessionCache
        yield* cache.forgetSessions(["e"])
        // Loaded after the invalidation but (say) before the revoking transaction committed: the old row.
        yield* uncachedThenCached(cache, "e", () =>
          Effect.sync(() => expect(cache.cachedSession("e", SESSION_CACHE_TTL_MS - 1)).toBeUndefined())
        )
        // The same for a user's status.
        yield* cache.forgetUser("u")
        expect(yield* cache.userStatus("u", Effect.succeed("enabled"))).toBe("enabled")
        expect(yield* cache.userStatus("u", Effect.succeed("disabled"))).toBe("disabled")
      }).pipe(Effect.provide(SessionCache.Default))
  )

  it.effect(
    "after more invalidations than it keeps stamps for, every key waits the time to live before it is cached again",
    () =>
      Effect.gen(function* () {
        const cache = yield* SessionCache
        yield* cache.forgetSessions(["f"])
        yield* cache.forgetSessions(Array.from({ length: 60_000 }, (_, index) => `flood${index}`))
        // "f"'s own stamp was dropped for memory; it is still not cached within the time to live.
        yield* uncachedThenCached(cache, "f")
      }).pipe(Effect.provide(SessionCache.Default))
  )
})
