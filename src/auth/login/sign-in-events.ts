import { Effect } from "effect"
import { SecurityLog, securityEvent } from "../../events/security-log.js"
import type { LoginTransaction } from "../pending.js"
import type { Attempt, LoginThrottled } from "../throttle.js"

/**
 * The security log lines of a local sign-in (docs/operations.md, "Security events"): who (the user id
 * when the name is an account; never the typed name, which may be a mistyped password), from where,
 * for which client, and why. Never a password or code.
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
export const lockoutsEnded = (who: Who, attempt: Attempt) =>
  Effect.forEach(attempt.lockoutsEnded, (window) => securityEvent("auth.lockout_ended", { ...base(who), window }), {
    discard: true
  })
