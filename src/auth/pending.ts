import { randomBytes } from "node:crypto"
import { Clock, Data, Effect, Option } from "effect"
import type { StepUpPurpose } from "../approvals/step-up.js"
import { sha256Hex } from "../crypto/hashing.js"
import type { UpstreamAttempt } from "../identity/upstream/flow.js"
import type { AuthorizationRequest } from "./authorize/request.js"

/** Spec Limits: login transactions expire in 5 minutes, single-use authorization codes in 1 minute. */
export const TRANSACTION_TTL_MS = 5 * 60 * 1000
export const CODE_TTL_MS = 60 * 1000
/**
 * A redeemed code is remembered as long as the session it created can live (8 hours from sign-in, so
 * at most this long after redemption): a replay at any time in that session still revokes it.
 */
export const REDEEMED_CODE_MEMORY_MS = 8 * 60 * 60 * 1000
/** Bounds memory against floods of unauthenticated starts (see `start` for who is dropped first). */
export const MAX_TRANSACTIONS = 10_000
/** Open sign-ins one client address (an IPv6 /64) may have: a flood from one source stops here. */
export const MAX_TRANSACTIONS_PER_ADDRESS = 50
export const MAX_CODES = 10_000
/** A redeemed code is a hash and a session id (~250 bytes): 50,000 (one per sign-in) is ~12 MB at most. */
export const MAX_REDEEMED_CODES = 50_000

export type LoginStage = "sign_in" | "upstream" | "mfa" | "enroll" | "consent"

/** One browser sign-in in progress, named by a random id in the page URL and bound to the browser. */
export interface LoginTransaction {
  readonly id: string
  /** SHA-256 of the browser-binding cookie that started it: another browser cannot continue it. */
  readonly browserBinding: string
  /** The anti-CSRF token every form of this transaction carries. */
  readonly csrf: string
  readonly expiresAt: number
  /** The client address that started it (`addressBucket`), for the per-address cap. */
  readonly address: string
  /** The client's authorization request; absent for a sign-in to the grants portal. */
  readonly request: AuthorizationRequest | undefined
  readonly stage: LoginStage
  readonly userId?: string
  /** The name typed at sign-in: the throttling key for the second factor, the label for enrollment. */
  readonly username?: string
  readonly authTime?: number
  /** The TOTP secret offered during enrollment, until the person confirms it with a code. */
  readonly enrollSecret?: Uint8Array
  /** Stage `upstream`: the state, nonce and PKCE verifier of the trip to the identity provider. */
  readonly upstream?: UpstreamAttempt
  /** A portal sign-in: the gateway page to open afterwards (`/sso/approvals…`); default the grants page. */
  readonly returnTo?: string
  /** A reviewer's step-up for one approval (docs/approvals.md, "Step-up"): no new sign-in, only evidence. */
  readonly stepUp?: StepUpPurpose
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
}

/** What is kept of a code once redeemed: enough to revoke its session if it comes back. */
interface RedeemedCode {
  readonly forgetAt: number
  sessionId?: string
  replayed?: boolean
}

export type Redemption =
  | { readonly _tag: "Redeemed"; readonly grant: CodeGrant; readonly handle: string }
  /** Presented again: `sessionId` is what its first redemption created, to be revoked. */
  | { readonly _tag: "Replayed"; readonly sessionId: string | undefined }
  | { readonly _tag: "Invalid" }

export class TooManySignIns extends Data.TaggedError("TooManySignIns")<{ readonly retryAfterSeconds: number }> {}

const randomToken = () => randomBytes(32).toString("base64url")

/** Deletes entries from the oldest while `drop` says so; Maps iterate in insertion order. */
const trim = <V>(map: Map<string, V>, drop: (value: V) => boolean) => {
  for (const [key, value] of map) {
    if (!drop(value)) break
    map.delete(key)
  }
}

/**
 * Pending authorization transactions and codes, in memory only: lost on restart.
 * Process-wide, so a reload (SIGHUP) keeps them: the auth configuration cannot change on reload.
 * All expiry runs on the Effect `Clock`. Codes are kept by their SHA-256, so memory holds no usable code.
 */
export class PendingAuthorizations extends Effect.Service<PendingAuthorizations>()("gateway/PendingAuthorizations", {
  sync: () => {
    const transactions = new Map<string, LoginTransaction>()
    const perAddress = new Map<string, number>()
    const codes = new Map<string, CodeEntry>()
    const redeemed = new Map<string, RedeemedCode>()
    /** The `state` sent to the upstream identity provider → the transaction it belongs to. */
    const byUpstreamState = new Map<string, string>()

    // Every removal goes through here, so the per-address counts stay exact.
    const remove = (id: string) => {
      const transaction = transactions.get(id)
      if (transaction === undefined) return false
      transactions.delete(id)
      if (transaction.upstream !== undefined) byUpstreamState.delete(transaction.upstream.state)
      const left = (perAddress.get(transaction.address) ?? 1) - 1
      if (left <= 0) perAddress.delete(transaction.address)
      else perAddress.set(transaction.address, left)
      return true
    }

    /** When the address's oldest open sign-in ends: the earliest its next one may start. */
    const oldestExpiryOf = (address: string) => {
      for (const transaction of transactions.values()) {
        if (transaction.address === address) return transaction.expiresAt
      }
      return 0
    }

    /**
     * Makes room for one more. Only sign-ins still at the password step are ever dropped, oldest
     * first: a flood of anonymous starts cannot push out someone who already proved a password.
     */
    const makeRoom = () => {
      for (const [id, transaction] of transactions) {
        if (transactions.size < MAX_TRANSACTIONS) return true
        if (transaction.stage === "sign_in") remove(id)
      }
      return transactions.size < MAX_TRANSACTIONS
    }

    /**
     * Opens a sign-in for a browser at client address `address` (an `addressBucket`). Refused with
     * `TooManySignIns` when that address already has `MAX_TRANSACTIONS_PER_ADDRESS` open, or when every
     * slot is held by a sign-in past its password step.
     */
    const start = Effect.fn("PendingAuthorizations.start")(function* (
      browserBinding: string,
      request: AuthorizationRequest | undefined,
      address: string
    ) {
      const now = yield* Clock.currentTimeMillis
      for (const [id, transaction] of transactions) {
        if (transaction.expiresAt > now) break
        remove(id)
      }
      if ((perAddress.get(address) ?? 0) >= MAX_TRANSACTIONS_PER_ADDRESS) {
        return yield* new TooManySignIns({
          retryAfterSeconds: Math.max(1, Math.ceil((oldestExpiryOf(address) - now) / 1000))
        })
      }
      if (!makeRoom()) return yield* new TooManySignIns({ retryAfterSeconds: 60 })
      const transaction: LoginTransaction = {
        id: randomToken(),
        browserBinding,
        csrf: randomToken(),
        expiresAt: now + TRANSACTION_TTL_MS,
        address,
        request,
        stage: "sign_in"
      }
      transactions.set(transaction.id, transaction)
      perAddress.set(address, (perAddress.get(address) ?? 0) + 1)
      return transaction
    })

    const find = Effect.fn("PendingAuthorizations.find")(function* (id: string) {
      const now = yield* Clock.currentTimeMillis
      const transaction = transactions.get(id)
      if (transaction === undefined) return Option.none<LoginTransaction>()
      if (transaction.expiresAt <= now) {
        remove(id)
        return Option.none<LoginTransaction>()
      }
      return Option.some(transaction)
    })

    /** Replaces a transaction's state; its id, binding, address, CSRF token and expiry never change. */
    const update = (transaction: LoginTransaction) =>
      Effect.sync(() => {
        const current = transactions.get(transaction.id)
        if (current === undefined) return
        if (current.upstream !== undefined) byUpstreamState.delete(current.upstream.state)
        if (transaction.upstream !== undefined) byUpstreamState.set(transaction.upstream.state, transaction.id)
        transactions.set(transaction.id, { ...transaction, address: current.address })
      })

    /**
     * The transaction waiting for the upstream's answer with this `state`, taken out of the index: a
     * state is answered once, so a replayed callback finds nothing.
     */
    const takeByUpstreamState = Effect.fn("PendingAuthorizations.takeByUpstreamState")(function* (state: string) {
      const id = byUpstreamState.get(state)
      if (id === undefined) return Option.none<LoginTransaction>()
      byUpstreamState.delete(state)
      const found = yield* find(id)
      if (Option.isNone(found) || found.value.upstream?.state !== state) return Option.none<LoginTransaction>()
      return found
    })

    const finish = (id: string) => Effect.sync(() => remove(id))

    const issueCode = Effect.fn("PendingAuthorizations.issueCode")(function* (grant: CodeGrant) {
      const now = yield* Clock.currentTimeMillis
      trim(codes, (entry) => entry.expiresAt <= now)
      trim(codes, () => codes.size >= MAX_CODES)
      const code = randomToken()
      codes.set(sha256Hex(code), { grant, expiresAt: now + CODE_TTL_MS })
      return code
    })

    /** Redeems a code once; the returned `handle` attaches the session it produces (see `attachSession`). */
    const redeem = Effect.fn("PendingAuthorizations.redeem")(function* (code: string) {
      const now = yield* Clock.currentTimeMillis
      const handle = sha256Hex(code)
      const spent = redeemed.get(handle)
      if (spent !== undefined && spent.forgetAt > now) {
        spent.replayed = true
        return { _tag: "Replayed", sessionId: spent.sessionId } as Redemption
      }
      const entry = codes.get(handle)
      if (entry === undefined) return { _tag: "Invalid" } as Redemption
      codes.delete(handle)
      if (entry.expiresAt <= now) return { _tag: "Invalid" } as Redemption
      trim(redeemed, (old) => old.forgetAt <= now)
      trim(redeemed, () => redeemed.size >= MAX_REDEEMED_CODES)
      redeemed.set(handle, { forgetAt: now + REDEEMED_CODE_MEMORY_MS })
      return { _tag: "Redeemed", grant: entry.grant, handle } as Redemption
    })

    /**
     * Records the session a redeemed code produced. True when the code was replayed in the meantime:
     * the caller must then revoke the session it just created.
     */
    const attachSession = (handle: string, sessionId: string) =>
      Effect.sync(() => {
        const entry = redeemed.get(handle)
        if (entry === undefined) return false
        entry.sessionId = sessionId
        return entry.replayed === true
      })

    /**
     * A replaced or disabled identity connection: sign-ins waiting for its upstream, and codes issued to
     * its people, are dropped — nothing started under the old connection completes under the new one.
     */
    const forgetConnection = (userIds: ReadonlySet<string>, upstreamSignIns: boolean) =>
      Effect.sync(() => {
        for (const [id, transaction] of transactions) {
          const waiting = upstreamSignIns && transaction.stage === "upstream"
          if (waiting || (transaction.userId !== undefined && userIds.has(transaction.userId))) remove(id)
        }
        for (const [hash, entry] of codes) if (userIds.has(entry.grant.userId)) codes.delete(hash)
      })

    return {
      start,
      find,
      update,
      takeByUpstreamState,
      forgetConnection,
      finish,
      issueCode,
      redeem,
      attachSession
    } as const
  }
}) {}
