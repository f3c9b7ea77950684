import { Clock, Data, Effect } from "effect"
import { sha256Hex } from "../crypto/hashing.js"
import { groupNameKey } from "../policy/group-name.js"
import { addressBucket } from "./client-address.js"

/**
 * Failed-login throttling (docs/authorization-server.md, "Throttling"), sliding 15-minute windows:
 *
 * - 5 failures per account from one client address: what stops guessing, without letting someone at
 *   another address lock the account's owner out;
 * - 20 failures per client address, whatever the accounts: one source spraying many names;
 * - 100 failures per account from all addresses together: the backstop against a guess spread over
 *   many addresses. It does not apply at an address this account completed a sign-in from in the last
 *   30 days ("known addresses"), so guessing from elsewhere cannot lock the owner out where they work.
 *
 * An attempt is counted BEFORE the password or code is checked, in the same synchronous step as the
 * limit check, and taken back when it succeeds: parallel requests therefore cannot start more checks
 * than the limit allows. Wrong passwords and wrong TOTP codes count alike; a complete sign-in also
 * clears its account-and-address window. In memory: a single instance (docs/storage.md), and a restart is not
 * something an attacker can trigger.
 */
export const WINDOW_MS = 15 * 60 * 1000
export const MAX_ACCOUNT_ADDRESS_FAILURES = 5
export const MAX_ADDRESS_FAILURES = 20
export const MAX_ACCOUNT_FAILURES = 100
/** Keys per window kind; past it the key written longest ago goes (expired ones are by then the oldest). */
export const MAX_KEYS = 100_000
/** How long an address stays known to an account after a complete sign-in from it. */
export const KNOWN_ADDRESS_MS = 30 * 24 * 60 * 60 * 1000

/** Which limit a lockout is: the account at one address, one address over all accounts, or the account everywhere. */
export type ThrottleWindow = "account_at_address" | "address" | "account"

export class LoginThrottled extends Data.TaggedError("LoginThrottled")<{
  readonly retryAfterSeconds: number
  readonly window: ThrottleWindow
  /** This refusal starts a lockout (the first since the window filled): logged as `auth.lockout_started`. */
  readonly started: boolean
}> {}

/**
 * Writes `key` as the most recent entry of a map kept to `maxKeys` entries: the map's order is write
 * order, so the entries written longest ago are the ones dropped.
 */
const setMostRecent = <V>(map: Map<string, V>, key: string, value: V, maxKeys: number) => {
  map.delete(key)
  for (const stalest of map.keys()) {
    if (map.size < maxKeys) break
    map.delete(stalest)
  }
  map.set(key, value)
}

export interface FailureWindow {
  /** Seconds until `key` may try again, or 0. */
  readonly wait: (key: string, now: number) => number
  readonly add: (key: string, at: number) => void
  /** Takes back one attempt made at `at` (it succeeded). */
  readonly remove: (key: string, at: number) => void
  readonly clear: (key: string) => void
  /** Drops the failures of `key` counted before `since`; true when there were any. */
  readonly forgetBefore: (key: string, since: number) => boolean
}

/** The last `limit` failure times per key. Writing a key moves it last, so the first key is the stalest. */
export const makeFailureWindow = (limit: number, maxKeys = MAX_KEYS): FailureWindow => {
  const failures = new Map<string, Array<number>>()
  const recent = (key: string, now: number) => (failures.get(key) ?? []).filter((at) => at > now - WINDOW_MS)
  return {
    wait: (key, now) => {
      const list = recent(key, now)
      const oldest = list[list.length - limit]
      return list.length >= limit && oldest !== undefined ? Math.ceil((oldest + WINDOW_MS - now) / 1000) : 0
    },
    add: (key, at) => {
      const list = [...recent(key, at), at].slice(-limit)
      setMostRecent(failures, key, list, maxKeys)
    },
    remove: (key, at) => {
      const list = failures.get(key)
      const index = list?.lastIndexOf(at) ?? -1
      if (list === undefined || index < 0) return
      list.splice(index, 1)
      if (list.length === 0) failures.delete(key)
    },
    clear: (key) => {
      failures.delete(key)
    },
    forgetBefore: (key, since) => {
      const list = failures.get(key)
      if (list === undefined) return false
      const kept = list.filter((at) => at >= since)
      if (kept.length === list.length) return false
      if (kept.length === 0) failures.delete(key)
      else failures.set(key, kept)
      return true
    }
  }
}

/** A counted attempt, to be taken back with `release` or `succeeded` when it turns out right. */
export interface Attempt {
  readonly at: number
  readonly accountAtAddress: string
  readonly address: string
  readonly account: string
  /** Counted in the all-addresses window (not at a known address): only then is it taken back from there. */
  readonly countedForAccount: boolean
  /** Lockouts this attempt is the first one after: logged as `auth.lockout_ended`. */
  readonly lockoutsEnded: ReadonlyArray<ThrottleWindow>
}

/**
 * Fixed-size keys: the typed name is keyed as sign-in looks accounts up (`groupNameKey`: invisible
 * characters dropped, spaces collapsed and trimmed, full case folding), so every spelling that reaches
 * one account — `bob`, ` bob`, `b\u200Bob`, `BOB\u00AD` — counts in one window, then hashed, so a long
 * name costs no more memory than a short one (names over 256 characters never get here, see
 * `MAX_USERNAME_LENGTH`).
 */
export const throttleKeys = (username: string, address: string) => {
  const account = sha256Hex(`account\n${groupNameKey(username)}`)
  const bucket = addressBucket(address)
  return { account, address: bucket, accountAtAddress: sha256Hex(`pair\n${account}\n${bucket}`) }
}

/**
 * Account-and-address pairs that completed a sign-in, with when: the owner's usual places. Bounded like
 * the windows (the pair written longest ago goes first); a restart forgets them.
 */
export const makeKnownAddresses = (maxKeys = MAX_KEYS) => {
  const known = new Map<string, number>()
  return {
    has: (pair: string, now: number) => {
      const at = known.get(pair)
      return at !== undefined && at > now - KNOWN_ADDRESS_MS
    },
    add: (pair: string, now: number) => {
      setMostRecent(known, pair, now, maxKeys)
    }
  }
}

export class LoginThrottle extends Effect.Service<LoginThrottle>()("gateway/LoginThrottle", {
  sync: () => {
    const pairs = makeFailureWindow(MAX_ACCOUNT_ADDRESS_FAILURES)
    const addresses = makeFailureWindow(MAX_ADDRESS_FAILURES)
    const accounts = makeFailureWindow(MAX_ACCOUNT_FAILURES)
    const known = makeKnownAddresses()
    /** Window keys that refused an attempt, with which window and until when: lockouts in progress. */
    const lockouts = new Map<string, { readonly window: ThrottleWindow; readonly until: number }>()

    /** Counts an attempt for `username` from `address`, or fails when any window is full. */
    const reserve = Effect.fn("LoginThrottle.reserve")(function* (username: string, address: string) {
      const now = yield* Clock.currentTimeMillis
      const keys = throttleKeys(username, address)
      // Check and count in one synchronous step: no other request can slip in between.
      // At a known address only the per-address windows apply: the backstop is for strangers.
      const knownHere = known.has(keys.accountAtAddress, now)
      const waits: ReadonlyArray<readonly [ThrottleWindow, string, number]> = [
        ["account_at_address", keys.accountAtAddress, pairs.wait(keys.accountAtAddress, now)],
        ["address", keys.address, addresses.wait(keys.address, now)],
        ["account", keys.account, knownHere ? 0 : accounts.wait(keys.account, now)]
      ]
      const longest = waits.reduce((a, b) => (b[2] > a[2] ? b : a))
      const [window, key, wait] = longest
      if (wait > 0) {
        const started = (lockouts.get(key)?.until ?? 0) <= now
        setMostRecent(lockouts, key, { window, until: now + wait * 1000 }, MAX_KEYS)
        return yield* new LoginThrottled({ retryAfterSeconds: wait, window, started })
      }
      const lockoutsEnded: Array<ThrottleWindow> = []
      for (const [each, eachKey] of waits) {
        if (lockouts.delete(eachKey)) lockoutsEnded.push(each)
      }
      pairs.add(keys.accountAtAddress, now)
      addresses.add(keys.address, now)
      if (!knownHere) accounts.add(keys.account, now)
      return { at: now, ...keys, countedForAccount: !knownHere, lockoutsEnded } satisfies Attempt
    })

    /** The attempt was right (a correct password before the second factor): it was no failure. */
    const release = (attempt: Attempt) =>
      Effect.sync(() => {
        pairs.remove(attempt.accountAtAddress, attempt.at)
        addresses.remove(attempt.address, attempt.at)
        // A stranger's failure counted in the same millisecond must not be the one taken back.
        if (attempt.countedForAccount) accounts.remove(attempt.account, attempt.at)
      })

    /**
     * The sign-in is complete: the attempt was no failure, and this account may start afresh from
     * this address. The address and all-addresses windows keep their other failures: a success says
     * nothing about who else is guessing.
     */
    const succeeded = (attempt: Attempt) =>
      Effect.zipRight(
        release(attempt),
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            pairs.clear(attempt.accountAtAddress)
            known.add(attempt.accountAtAddress, now)
          })
        )
      )

    /**
     * The account's password was set anew at `since` (an operator's `init-admin --reset`): failures
     * counted for it before then were guesses at a password that no longer exists, so its own windows
     * (at this address and from all addresses) forget them. The address's window across accounts is
     * left alone. True when anything was forgotten.
     */
    const forgiveBefore = (username: string, address: string, since: number) =>
      Effect.sync(() => {
        const keys = throttleKeys(username, address)
        const pair = pairs.forgetBefore(keys.accountAtAddress, since)
        const account = accounts.forgetBefore(keys.account, since)
        return pair || account
      })

    return { reserve, release, succeeded, forgiveBefore } as const
  }
}) {}
