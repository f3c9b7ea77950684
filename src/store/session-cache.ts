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
 * reach a running gateway. Single instance only (spec: multi-instance consistency is out of scope).
 */
export const SESSION_CACHE_TTL_MS = 5_000
const MAX_ENTRIES = 50_000

const makeMap = <A>() => {
  const entries = new Map<string, Entry<A>>()
  return {
    get: (key: string, now: number): A | undefined => {
      const entry = entries.get(key)
      if (entry === undefined) return undefined
      if (now - entry.loadedAt >= SESSION_CACHE_TTL_MS || now < entry.loadedAt) {
        entries.delete(key)
        return undefined
      }
      return entry.value
    },
    set: (key: string, value: A, now: number) => {
      // A full cache is cleared rather than scanned: refilling costs one query per live session.
      if (entries.size >= MAX_ENTRIES) entries.clear()
      entries.set(key, { value, loadedAt: now })
    },
    delete: (key: string) => {
      entries.delete(key)
    }
  }
}

export class SessionCache extends Effect.Service<SessionCache>()("gateway/SessionCache", {
  sync: () => {
    const sessions = makeMap<CachedSession>()
    const users = makeMap<string>()
    const now = Clock.currentTimeMillis
    return {
      session: (id: string) => Effect.map(now, (at) => sessions.get(id, at)),
      rememberSession: (id: string, value: CachedSession) => Effect.map(now, (at) => sessions.set(id, value, at)),
      userStatus: (id: string) => Effect.map(now, (at) => users.get(id, at)),
      rememberUserStatus: (id: string, status: string) => Effect.map(now, (at) => users.set(id, status, at)),
      forgetSessions: (ids: Iterable<string>) =>
        Effect.sync(() => {
          for (const id of ids) sessions.delete(id)
        }),
      forgetUser: (id: string) => Effect.sync(() => users.delete(id))
    } as const
  }
}) {}
