import { Data } from "effect"
import type { LoginThrottled, ThrottleWindow } from "../../auth/throttle.js"

/**
 * Why an LDAP sign-in was refused: a closed list (docs/ldap.md, "Refusals"). The person is told only
 * "wrong user name or password", "try again later" or "sign-in is unavailable"; the reason and its
 * detail are for the log.
 */
export type LdapFailureReason =
  /** The settings have problems (`validateLdapSettings`); nothing was sent. */
  | "invalid_settings"
  /** Empty, blank, over-long or malformed user name or password; nothing was sent and nothing counted. */
  | "invalid_input"
  /** Too many failures for this name or from this address; nothing was sent (`retryAfterSeconds`). */
  | "throttled"
  /** Too many LDAP sign-ins running and waiting already; nothing was sent. */
  | "busy"
  /** The directory could not be reached: refused, unresolvable, or no answer within the time limits. */
  | "unreachable"
  /** TLS could not be set up: untrusted certificate, a certificate for another host, or StartTLS refused. */
  | "tls_failed"
  /** The directory refused the service account's bind (`bind_dn`, `bind_password`). */
  | "service_bind_failed"
  /** The user search found nobody. */
  | "no_such_user"
  /** The user search found more than one entry: nobody is signed in rather than the wrong one. */
  | "ambiguous_user"
  /** The person (or one of their groups) has no usable stable id: absent, empty or several values. */
  | "missing_stable_id"
  /** The directory refused the person's bind: wrong password, or an account it will not let in. */
  | "invalid_credentials"
  /** A user or group search failed, timed out, or answered something unusable. */
  | "search_failed"
  /** The person is in more groups than the gateway takes (`MAX_GROUPS`). */
  | "too_many_groups"

export class LdapSignInFailed extends Data.TaggedError("LdapSignInFailed")<{
  readonly reason: LdapFailureReason
  /** What went wrong, for operators: never the password, never the typed name (it may be a mistyped password). */
  readonly detail: string
  /** `throttled`: seconds until the next attempt is allowed. */
  readonly retryAfterSeconds?: number
  /** `throttled`: the refusal as the throttle gave it (which window, and whether this refusal started a lockout). */
  readonly throttled?: LoginThrottled
  /** Lockouts that ended with this (counted) attempt, for `auth.lockout_ended` lines. */
  readonly lockoutsEnded?: ReadonlyArray<ThrottleWindow>
}> {}

export const refuse = (reason: LdapFailureReason, detail: string) => new LdapSignInFailed({ reason, detail })
