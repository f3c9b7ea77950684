import { createHash, randomBytes } from "node:crypto"
import { Clock, Effect } from "effect"
import { SESSION_TTL_MS } from "../../auth/token/mint.js"

/** A console session ends after this long without a request (docs/console.md, "Sessions"). */
export const CONSOLE_IDLE_MS = 30 * 60 * 1000
/** And at the latest this long after sign-in: the gateway session's own 8 hours. */
export const CONSOLE_ABSOLUTE_MS = SESSION_TTL_MS
/** A sign-in must come back to the callback within this. */
export const SIGN_IN_TTL_MS = 10 * 60 * 1000
/** Bounds of what is held in memory: past them the oldest entry goes first. */
const MAX_SESSIONS = 10_000
const MAX_SIGN_INS = 10_000

/** What the console holds for one signed-in browser; the cookie holds only the random key. */
export interface ConsoleSession {
  readonly userId: string
  /** The synchronizer token every form of this session carries (`csrf`). */
  readonly csrf: string
  readonly createdAt: number
  lastSeen: number
  /** The admin resource's tokens from the gateway's own authorization server, renewed in-process. */
  accessToken: string
  accessExpiresAt: number
  refreshToken: string | undefined
  /** The confirmation of the last form, shown once on the next page (POST/redirect/GET). */
  notice: string | undefined
  /** One renewal at a time: a refresh token presented twice would revoke the whole session. */
  readonly renewal: Effect.Semaphore
}

/** A sign-in the browser started: the PKCE verifier and state, and where to go afterwards. */
export interface PendingSignIn {
  readonly state: string
  readonly verifier: string
  readonly returnTo: string
  readonly startedAt: number
}

const keyOf = (cookie: string) => createHash("sha256").update(cookie).digest("base64url")
export const randomToken = () => randomBytes(32).toString("base64url")
const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** Drops the oldest entries until `map` has room for one more. */
const makeRoom = <V>(map: Map<string, V>, max: number) => {
  for (const key of map.keys()) {
    if (map.size < max) return
    map.delete(key)
  }
}

/**
 * Console sessions and sign-ins in progress, process-wide (a reload keeps them), in memory only: the
 * cookie carries 32 random bytes and the maps are keyed by their SHA-256, so neither a heap dump nor a
 * log holds a usable cookie. A restart signs administrators out of the console — on purpose: a
 * session holds a refresh token, which the Store keeps only as a hash (docs/console.md, "Sessions").
 */
export class ConsoleSessions extends Effect.Service<ConsoleSessions>()("gateway/ConsoleSessions", {
  sync: () => {
    const sessions = new Map<string, ConsoleSession>()
    const signIns = new Map<string, PendingSignIn>()

    const startSignIn = (returnTo: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const cookie = randomToken()
        const pending: PendingSignIn = { state: randomToken(), verifier: randomToken(), returnTo, startedAt: now }
        makeRoom(signIns, MAX_SIGN_INS)
        signIns.set(keyOf(cookie), pending)
        return { cookie, pending }
      })

    /** The sign-in this browser started, once: taken whether or not it is still fresh. */
    const takeSignIn = (cookie: string | undefined) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (cookie === undefined || !TOKEN.test(cookie)) return undefined
        const key = keyOf(cookie)
        const pending = signIns.get(key)
        signIns.delete(key)
        return pending !== undefined && now - pending.startedAt < SIGN_IN_TTL_MS ? pending : undefined
      })

    const create = (fields: Pick<ConsoleSession, "userId" | "accessToken" | "accessExpiresAt" | "refreshToken">) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const cookie = randomToken()
        makeRoom(sessions, MAX_SESSIONS)
        sessions.set(keyOf(cookie), {
          ...fields,
          csrf: randomToken(),
          createdAt: now,
          lastSeen: now,
          notice: undefined,
          renewal: Effect.unsafeMakeSemaphore(1)
        })
        return cookie
      })

    /** The live session of `cookie`; one past its idle or absolute end is removed and not found. */
    const find = (cookie: string | undefined) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (cookie === undefined || !TOKEN.test(cookie)) return undefined
        const key = keyOf(cookie)
        const session = sessions.get(key)
        if (session === undefined) return undefined
        if (now - session.lastSeen >= CONSOLE_IDLE_MS || now - session.createdAt >= CONSOLE_ABSOLUTE_MS) {
          sessions.delete(key)
          return undefined
        }
        return session
      })

    const end = (cookie: string | undefined) =>
      Effect.sync(() => {
        if (cookie !== undefined && TOKEN.test(cookie)) sessions.delete(keyOf(cookie))
      })

    return { startSignIn, takeSignIn, create, find, end, size: () => sessions.size } as const
  }
}) {}
