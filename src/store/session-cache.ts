import { Clock, Effect } from "effect"

/** What the per-request session check needs from a stored session. */
export interface CachedSession {
  readonly userId: string
  readonly clientId: string
  readonly expiresAt: number
  readonly revoked: boolean
}

interface Entry<A> {
  readonly value: A
  readonly loadedAt: number
}

/**
 * Makes the per-request session check (every /mcp request) a map lookup instead of two queries. Every
 * write in this process that revokes a session or changes a user's status invalidates the entry it
 * touches, so revocation and disabling deny the very next request. Entries also expire after
 * `TTL_MS`, which bounds how long a write by another process (`gateway init-admin --reset`) takes to
 * reach a running gateway. Single instance only (docs/storage.md).
 */
export const SESSION_CACHE_TTL_MS = 5_000
const MAX_ENTRIES = 50_000
/** Invalidation stamps kept per key; older ones fold into one floor (see `makeMap`). */
const MAX_STAMPS = 50_000

/**
 * A read-through map (absent values are not kept) that never stores what an invalidation overtook. A load reads the logical clock
 * before it queries; an invalidation ticks the clock and stamps its key. The loaded value is stored
 * only if its key was not stamped after the load began: a revocation that lands between the query
 * and the store would otherwise be hidden behind a stale "live" entry for `SESSION_CACHE_TTL_MS`.
 * Stamps are bounded: the oldest are dropped and their highest becomes the floor every unstamped key
 * is assumed to have — too old a floor only costs an extra query, never a stale entry.
 *
 * A write invalidates inside its transaction, before the commit: until the commit, a load still reads
 * the row as it was. So for `SESSION_CACHE_TTL_MS` after its invalidation a key is read from the store
 * every time and never cached — a load in that window may have read the old row — after which the
 * write has committed (or the entry would have expired by then anyway).
 */
const makeMap = <A>() => {
  const entries = new Map<string, Entry<A>>()
  const stamps = new Map<string, { readonly tick: number; readonly at: number }>()
  let clock = 0
  let floor = 0
  // When the newest dropped stamp was made: a key without a stamp may have been invalidated then.
  let floorAt = Number.NEGATIVE_INFINITY
  const lastInvalidated = (key: string) => stamps.get(key)?.tick ?? floor
  // A clock that went back counts as "lately" too: in doubt, read from the store.
  const invalidatedLately = (key: string, now: number) => {
    const at = stamps.get(key)?.at ?? floorAt
    return now - at < SESSION_CACHE_TTL_MS
  }
  const fresh = (key: string, now: number): A | undefined => {
    const entry = entries.get(key)
    if (entry === undefined) return undefined
    if (now - entry.loadedAt >= SESSION_CACHE_TTL_MS || now < entry.loadedAt) {
      entries.delete(key)
      return undefined
    }
    return entry.value
  }
  return {
    /** The cached value, when there is a fresh one; never loads (the request's fast path, src/mcp/edge/post.ts). */
    peek: (key: string, now: number): A | undefined => fresh(key, now),
    readThrough: <E, R>(key: string, load: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const cached = fresh(key, now)
        if (cached !== undefined) return Effect.succeed(cached)
        const startedAt = clock
        return Effect.tap(load, (value) =>
          Effect.sync(() => {
            if (value === undefined || lastInvalidated(key) > startedAt || invalidatedLately(key, now)) return
            // A full cache is cleared rather than scanned: refilling costs one query per live session.
            if (entries.size >= MAX_ENTRIES) entries.clear()
            entries.set(key, { value, loadedAt: now })
          })
        )
      }),
    invalidate: (key: string, now: number) => {
      entries.delete(key)
      clock += 1
      stamps.delete(key)
      stamps.set(key, { tick: clock, at: now })
      for (const [old, stamp] of stamps) {
        if (stamps.size <= MAX_STAMPS) break
        stamps.delete(old)
        floor = stamp.tick
        floorAt = Math.max(floorAt, stamp.at)
      }
    }
  }
}

export class SessionCache extends Effect.Service<SessionCache>()("gateway/SessionCache", {
  sync: () => {
    const sessions = makeMap<CachedSession | undefined>()
    const users = makeMap<string>()
    return {
      /** The session `id` from the cache, else from `load` (cached unless invalidated meanwhile). */
      session: <E, R>(id: string, load: Effect.Effect<CachedSession | undefined, E, R>) =>
        sessions.readThrough(id, load),
      /** The status of user `id` from the cache, else from `load` (cached unless invalidated meanwhile). */
      userStatus: <E, R>(id: string, load: Effect.Effect<string, E, R>) => users.readThrough(id, load),
      /** The session `id` when the cache holds it fresh at `now` (ms); undefined means: ask `session`. */
      cachedSession: (id: string, now: number) => sessions.peek(id, now),
      /** The status of user `id` when the cache holds it fresh at `now` (ms); undefined means: ask `userStatus`. */
      cachedUserStatus: (id: string, now: number) => users.peek(id, now),
      forgetSessions: (ids: Iterable<string>) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          for (const id of ids) sessions.invalidate(id, now)
        }),
      forgetUser: (id: string) => Effect.map(Clock.currentTimeMillis, (now) => users.invalidate(id, now))
    } as const
  }
}) {}
