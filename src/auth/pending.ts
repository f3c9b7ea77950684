import { randomBytes } from "node:crypto"
import { Clock, Effect, Option } from "effect"
import { sha256Hex } from "../crypto/hashing.js"
import type { AuthorizationRequest } from "./authorize/request.js"

/** Spec Limits: login transactions expire in 5 minutes, single-use authorization codes in 1 minute. */
export const TRANSACTION_TTL_MS = 5 * 60 * 1000
export const CODE_TTL_MS = 60 * 1000
/**
 * A redeemed code is remembered this long (the access-token lifetime), so a replay within it still
 * finds and revokes the session the first redemption created.
 */
export const REDEEMED_CODE_MEMORY_MS = 10 * 60 * 1000
/** Bounds memory against floods of unauthenticated starts; the oldest entries are dropped first. */
export const MAX_TRANSACTIONS = 10_000
export const MAX_CODES = 10_000

export type LoginStage = "sign_in" | "mfa" | "enroll" | "consent"

/** One browser sign-in in progress, named by a random id in the page URL and bound to the browser. */
export interface LoginTransaction {
  readonly id: string
  /** SHA-256 of the browser-binding cookie that started it: another browser cannot continue it. */
  readonly browserBinding: string
  /** The anti-CSRF token every form of this transaction carries. */
  readonly csrf: string
  readonly expiresAt: number
  /** The client's authorization request; absent for a sign-in to the grants portal. */
  readonly request: AuthorizationRequest | undefined
  readonly stage: LoginStage
  readonly userId?: string
  /** The name typed at sign-in: the throttling key for the second factor, the label for enrollment. */
  readonly username?: string
  readonly authTime?: number
  /** The TOTP secret offered during enrollment, until the person confirms it with a code. */
  readonly enrollSecret?: Uint8Array
}

/** What an authorization code stands for. */
export interface CodeGrant {
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly userId: string
  readonly scope: ReadonlyArray<string>
  readonly resource: string
  readonly authTime: number
}

interface CodeEntry {
  readonly grant: CodeGrant
  readonly expiresAt: number
  redeemedAt?: number
  sessionId?: string
  replayed?: boolean
}

export type Redemption =
  | { readonly _tag: "Redeemed"; readonly grant: CodeGrant; readonly handle: string }
  /** Presented again: `sessionId` is what its first redemption created, to be revoked. */
  | { readonly _tag: "Replayed"; readonly sessionId: string | undefined }
  | { readonly _tag: "Invalid" }

const retainedUntil = (entry: CodeEntry) =>
  entry.redeemedAt === undefined
    ? entry.expiresAt
    : Math.max(entry.expiresAt, entry.redeemedAt + REDEEMED_CODE_MEMORY_MS)

const randomToken = () => randomBytes(32).toString("base64url")

/** Deletes entries from the oldest while `drop` says so; Maps iterate in insertion order. */
const trim = <V>(map: Map<string, V>, drop: (value: V) => boolean) => {
  for (const [key, value] of map) {
    if (!drop(value)) break
    map.delete(key)
  }
}

/**
 * Pending authorization transactions and codes, in memory only (spec MCP entry 6: lost on restart).
 * Process-wide, so a reload (SIGHUP) keeps them: the auth configuration cannot change on reload.
 * All expiry runs on the Effect `Clock`. Codes are kept by their SHA-256, so memory holds no usable code.
 */
export class PendingAuthorizations extends Effect.Service<PendingAuthorizations>()("gateway/PendingAuthorizations", {
  sync: () => {
    const transactions = new Map<string, LoginTransaction>()
    const codes = new Map<string, CodeEntry>()

    const start = Effect.fn("PendingAuthorizations.start")(function* (
      browserBinding: string,
      request: AuthorizationRequest | undefined
    ) {
      const now = yield* Clock.currentTimeMillis
      trim(transactions, (tx) => tx.expiresAt <= now)
      trim(transactions, () => transactions.size >= MAX_TRANSACTIONS)
      const transaction: LoginTransaction = {
        id: randomToken(),
        browserBinding,
        csrf: randomToken(),
        expiresAt: now + TRANSACTION_TTL_MS,
        request,
        stage: "sign_in"
      }
      transactions.set(transaction.id, transaction)
      return transaction
    })

    const find = Effect.fn("PendingAuthorizations.find")(function* (id: string) {
      const now = yield* Clock.currentTimeMillis
      const transaction = transactions.get(id)
      if (transaction === undefined) return Option.none<LoginTransaction>()
      if (transaction.expiresAt <= now) {
        transactions.delete(id)
        return Option.none<LoginTransaction>()
      }
      return Option.some(transaction)
    })

    /** Replaces a transaction's state; its id, binding, CSRF token and expiry never change. */
    const update = (transaction: LoginTransaction) =>
      Effect.sync(() => {
        if (transactions.has(transaction.id)) transactions.set(transaction.id, transaction)
      })

    const finish = (id: string) => Effect.sync(() => transactions.delete(id))

    const issueCode = Effect.fn("PendingAuthorizations.issueCode")(function* (grant: CodeGrant) {
      const now = yield* Clock.currentTimeMillis
      trim(codes, (entry) => retainedUntil(entry) <= now)
      trim(codes, () => codes.size >= MAX_CODES)
      const code = randomToken()
      codes.set(sha256Hex(code), { grant, expiresAt: now + CODE_TTL_MS })
      return code
    })

    /** Redeems a code once; the returned `handle` attaches the session it produces (see `attachSession`). */
    const redeem = Effect.fn("PendingAuthorizations.redeem")(function* (code: string) {
      const now = yield* Clock.currentTimeMillis
      const handle = sha256Hex(code)
      const entry = codes.get(handle)
      if (entry === undefined) return { _tag: "Invalid" } as Redemption
      if (entry.redeemedAt !== undefined) {
        entry.replayed = true
        return { _tag: "Replayed", sessionId: entry.sessionId } as Redemption
      }
      if (entry.expiresAt <= now) {
        codes.delete(handle)
        return { _tag: "Invalid" } as Redemption
      }
      entry.redeemedAt = now
      return { _tag: "Redeemed", grant: entry.grant, handle } as Redemption
    })

    /**
     * Records the session a redeemed code produced. True when the code was replayed in the meantime:
     * the caller must then revoke the session it just created.
     */
    const attachSession = (handle: string, sessionId: string) =>
      Effect.sync(() => {
        const entry = codes.get(handle)
        if (entry === undefined) return false
        entry.sessionId = sessionId
        return entry.replayed === true
      })

    return { start, find, update, finish, issueCode, redeem, attachSession } as const
  }
}) {}
