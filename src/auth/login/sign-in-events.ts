import { Effect } from "effect"
import { SecurityLog, securityEvent } from "../../events/security-log.js"
import type { LdapFailureReason, LdapSignInFailed } from "../../identity/ldap/failure.js"
import { addressBucket } from "../client-address.js"
import type { LoginTransaction } from "../pending.js"
import type { Attempt, LoginThrottled, ThrottleWindow } from "../throttle.js"

/**
 * The security log lines of a sign-in with a password, local or LDAP (docs/operations.md, "Security
 * events"): who (the user id when the name is an account; never the typed name, which may be a mistyped
 * password), from where, for which client, and why. Never a password or code.
 */
export type SignInStage = "password" | "totp" | "totp_enrollment"

interface Who {
  readonly address: string
  readonly transaction: LoginTransaction
  readonly userId: string | undefined
}

const base = ({ address, transaction, userId }: Who) => ({
  client_address: address,
  // The grants portal's own sign-in has no client request.
  client_id: transaction.request?.clientId ?? null,
  user_id: userId ?? null
})

/** A wrong password (or no such account), or a wrong second-factor code. */
export const signInFailed = (who: Who, stage: SignInStage) =>
  stage === "password"
    ? securityEvent("auth.sign_in_failed", {
        ...base(who),
        reason: who.userId === undefined ? "unknown_user" : "wrong_password"
      })
    : securityEvent("auth.totp_failed", { ...base(who), stage })

/**
 * A refused attempt: a lockout starting is always written; the refusals while it lasts at most 10 a
 * minute per address (a client hammering a locked account cannot flood the log).
 */
export const signInThrottled = (who: Who, stage: SignInStage, throttled: LoginThrottled) =>
  Effect.gen(function* () {
    const fields = { ...base(who), stage, window: throttled.window, retry_after_seconds: throttled.retryAfterSeconds }
    if (throttled.started) yield* securityEvent("auth.lockout_started", fields)
    yield* (yield* SecurityLog).limited(who.address, "auth.sign_in_throttled", fields)
  })

/** An attempt admitted after a lockout: the lockout is over (known at the first attempt after it). */
export const lockoutsEnded = (who: Who, attempt: Attempt) => lockoutWindowsEnded(who, attempt.lockoutsEnded)

/** The same for windows the LDAP sign-in reports (`LdapSignedIn.lockoutsEnded`, `LdapSignInFailed.lockoutsEnded`). */
export const lockoutWindowsEnded = (who: Who, windows: ReadonlyArray<ThrottleWindow>) =>
  Effect.forEach(windows, (window) => securityEvent("auth.lockout_ended", { ...base(who), window }), {
    discard: true
  })

/**
 * A refused LDAP sign-in: one `auth.ldap_sign_in_refused` line with the reason, the module's detail
 * (never the password or the typed name) and the connection's namespace; for `throttled` the window, and
 * `auth.lockout_started` when this refusal started the lockout. Lockouts the attempt ended are written
 * as for local sign-ins.
 */
export const ldapSignInRefused = (who: Who, provider: string, failure: LdapSignInFailed) =>
  Effect.gen(function* () {
    yield* lockoutWindowsEnded(who, failure.lockoutsEnded ?? [])
    const throttled = failure.throttled
    if (throttled?.started === true) {
      yield* securityEvent("auth.lockout_started", {
        ...base(who),
        stage: "ldap",
        window: throttled.window,
        retry_after_seconds: throttled.retryAfterSeconds
      })
    }
    yield* ldapSignInEnded(who, provider, {
      reason: failure.reason,
      detail: failure.detail,
      ...(throttled === undefined ? {} : { window: throttled.window, retry_after_seconds: throttled.retryAfterSeconds })
    })
  })

/**
 * The `auth.ldap_sign_in_refused` line itself (also for a person the directory let in but the gateway
 * does not: `account_access_required`, `connection_replaced`). Anyone can post the form, so at most 10
 * lines a minute per client address (then `suppressed`).
 */
export const ldapSignInEnded = (
  who: Who,
  provider: string,
  fields: { readonly reason: LdapFailureReason | "account_access_required" | "connection_replaced" } & Record<
    string,
    unknown
  >
) =>
  Effect.gen(function* () {
    yield* (yield* SecurityLog).limited(addressBucket(who.address), "auth.ldap_sign_in_refused", {
      ...fields,
      provider,
      client_address: who.address,
      client_id: who.transaction.request?.clientId ?? null
    })
  })
