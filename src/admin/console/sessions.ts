import { createHash, randomBytes } from "node:crypto"
import { Clock, Effect, Either, Redacted } from "effect"
import { SESSION_TTL_MS } from "../../auth/token/mint.js"
import { makeSealer } from "../../crypto/sealer.js"
import { isRecord } from "../../json.js"

/** A console session ends after this long without a request (docs/console.md, "Sessions"). */
export const CONSOLE_IDLE_MS = 30 * 60 * 1000
/** And at the latest this long after sign-in: the gateway session's own 8 hours. */
export const CONSOLE_ABSOLUTE_MS = SESSION_TTL_MS
/** A sign-in must come back to the callback within this. */
export const SIGN_IN_TTL_MS = 10 * 60 * 1000
/** Bounds of what is held in memory: past them the oldest entry goes first. */
const MAX_SESSIONS = 10_000
/** Sign-ins already taken, remembered for SIGN_IN_TTL_MS so that none is taken twice. */
const MAX_TAKEN = 100_000
/** A sign-in cookie longer than this is not one of ours. */
const MAX_SIGN_IN_COOKIE = 4096
/** What a sealed sign-in may take: browsers keep a cookie of at most 4,096 bytes, name and attributes included. */
const SIGN_IN_COOKIE_BUDGET = 3800
const SIGN_IN_CONTEXT = "console_sign_in"

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
const SEALED = /^[A-Za-z0-9_.-]+$/

const pendingOf = (value: unknown): PendingSignIn | undefined =>
  isRecord(value) &&
  typeof value["state"] === "string" &&
  typeof value["verifier"] === "string" &&
  typeof value["returnTo"] === "string" &&
  typeof value["startedAt"] === "number"
    ? { state: value["state"], verifier: value["verifier"], returnTo: value["returnTo"], startedAt: value["startedAt"] }
    : undefined

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Drops the oldest entries until `map` has room for one more. */
const makeRoom = <V>(map: Map<string, V>, max: number) => {
  for (const key of map.keys()) {
    if (map.size < max) return
    map.delete(key)
  }
}

/**
 * Console sessions, process-wide (a reload keeps them), in memory only: the cookie carries 32 random
 * bytes and the map is keyed by their SHA-256, so neither a heap dump nor a log holds a usable cookie.
 * A restart signs administrators out of the console — on purpose: a session holds a refresh token,
 * which the Store keeps only as a hash (docs/console.md, "Sessions").
 *
 * A sign-in in progress is held by the browser, not here: its cookie is the sign-in itself (state, PKCE
 * verifier, return path, start time) sealed with AES-256-GCM under a key made at start-up and never
 * written anywhere. Anyone can start a sign-in without signing in, so nothing they start may take memory
 * or push out someone else's: what the gateway remembers is only which sign-ins were taken at the
 * callback (so none is taken twice), for the 10 minutes a sign-in lasts.
 */
export class ConsoleSessions extends Effect.Service<ConsoleSessions>()("gateway/ConsoleSessions", {
  sync: () => {
    const sessions = new Map<string, ConsoleSession>()
    const sealer = makeSealer(Redacted.make(new Uint8Array(randomBytes(32))))
    /** The states of the sign-ins taken, with when, oldest first. */
    const taken = new Map<string, number>()

    const startSignIn = (returnTo: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const sealed = (path: string) => {
          const pending: PendingSignIn = {
            state: randomToken(),
            verifier: randomToken(),
            returnTo: path,
            startedAt: now
          }
          return { cookie: sealer.seal(JSON.stringify(pending), SIGN_IN_CONTEXT), pending }
        }
        // A return path that escapes long in JSON (backslashes double) could make a cookie browsers
        // drop, and a link that can never sign anyone in: such a sign-in returns to the overview.
        const wanted = sealed(returnTo)
        return wanted.cookie.length <= SIGN_IN_COOKIE_BUDGET ? wanted : sealed("/console")
      })

    const remember = (state: string, now: number) => {
      for (const [each, at] of taken) {
        if (now - at < SIGN_IN_TTL_MS && taken.size < MAX_TAKEN) break
        taken.delete(each)
      }
      taken.set(state, now)
    }

    /** The sign-in this browser started, once, within SIGN_IN_TTL_MS; undefined for anything else. */
    const takeSignIn = (cookie: string | undefined) =>
      Effect.gen(function* () {
        if (cookie === undefined || cookie.length > MAX_SIGN_IN_COOKIE || !SEALED.test(cookie)) return undefined
        const opened = yield* Effect.either(sealer.open(cookie, SIGN_IN_CONTEXT))
        if (Either.isLeft(opened)) return undefined
        const pending = pendingOf(parseJson(Buffer.from(opened.right).toString("utf8")))
        const now = yield* Clock.currentTimeMillis
        if (pending === undefined || now - pending.startedAt >= SIGN_IN_TTL_MS || taken.has(pending.state)) {
          return undefined
        }
        remember(pending.state, now)
        return pending
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
