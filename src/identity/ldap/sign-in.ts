import { Effect, Either, type Redacted } from "effect"
import { LoginThrottle, type ThrottleWindow } from "../../auth/throttle.js"
import { inputProblem, LdapDirectory, type LdapIdentity, settingsProblem } from "./authenticate.js"
import { type LdapFailureReason, LdapSignInFailed, refuse } from "./failure.js"
import { ldapNamespace } from "./namespace.js"
import type { LdapSettings } from "./settings.js"

/** LDAP sign-ins talking to the directory at once; each holds up to two connections. */
export const MAX_CONCURRENT_SIGN_INS = 16
/** Sign-ins waiting for one of those places; past it they are refused (`busy`). */
export const MAX_WAITING_SIGN_INS = 64

export interface LdapSignInRequest {
  readonly username: string
  readonly password: Redacted.Redacted<string>
  /** The client address (src/auth/client-address.ts): what the per-address windows count. */
  readonly address: string
}

export interface LdapSignedIn {
  readonly identity: LdapIdentity
  /** `ldapNamespace(settings)`: the subject is unique within it. */
  readonly namespace: string
  /** Lockouts this sign-in was the first attempt after, for `auth.lockout_ended` lines. */
  readonly lockoutsEnded: ReadonlyArray<ThrottleWindow>
}

/**
 * Failures that were guesses at a password: they stay counted. Everything else was not the person's
 * doing (the directory, the settings, a name it cannot tell apart) and is given back, so an outage
 * locks nobody out.
 */
const COUNTED: ReadonlySet<LdapFailureReason> = new Set(["invalid_credentials", "no_such_user"])

/**
 * The name the throttle counts under: the directory's namespace, then the name roughly as a directory
 * compares it (RFC 4518: compatibility forms folded, ignorable characters dropped, runs of spaces as
 * one, no leading or trailing space; the throttle lower-cases it), so " Alice", "alice" and "al\u200Bice"
 * share one window instead of giving a guesser three.
 */
export const throttleName = (namespace: string, username: string): string =>
  `ldap\n${namespace}\n${username
    .normalize("NFKC")
    .replace(/[\s\u0085]/gu, " ")
    .replace(/[\p{Default_Ignorable_Code_Point}\p{Cc}]/gu, "")
    .replace(/ {2,}/g, " ")
    .trim()}`

/**
 * LDAP sign-in as the sign-in page uses it (docs/ldap.md): `authenticate` behind the same failed-attempt
 * windows as local accounts (`LoginThrottle`: the same instance, so an address's failures count across
 * both) and a bound on how many run at once.
 *
 * An attempt is counted before the directory is asked (in the throttle's synchronous step), so parallel
 * guesses cannot exceed the limits; a successful sign-in gives its attempt back and makes the address
 * known to the name, like a complete local sign-in. Out-of-bounds input and broken settings are refused
 * before anything is counted or sent.
 */
export class LdapSignIn extends Effect.Service<LdapSignIn>()("gateway/LdapSignIn", {
  effect: Effect.gen(function* () {
    const throttle = yield* LoginThrottle
    const directory = yield* LdapDirectory
    const permits = yield* Effect.makeSemaphore(MAX_CONCURRENT_SIGN_INS)
    /** Running and waiting, checked and taken in one synchronous step. */
    let admitted = 0

    const bounded = <A, E>(work: Effect.Effect<A, E>): Effect.Effect<A, E | LdapSignInFailed> =>
      Effect.suspend((): Effect.Effect<A, E | LdapSignInFailed> => {
        if (admitted >= MAX_CONCURRENT_SIGN_INS + MAX_WAITING_SIGN_INS) {
          return Effect.fail(
            refuse("busy", `${MAX_CONCURRENT_SIGN_INS} LDAP sign-ins running and ${MAX_WAITING_SIGN_INS} waiting`)
          )
        }
        admitted += 1
        return permits
          .withPermits(1)(work)
          .pipe(
            Effect.ensuring(
              Effect.sync(() => {
                admitted -= 1
              })
            )
          )
      })

    const signIn = Effect.fn("LdapSignIn.signIn")(function* (settings: LdapSettings, request: LdapSignInRequest) {
      const refused = inputProblem(request.username, request.password) ?? settingsProblem(settings)
      if (refused !== undefined) return yield* refused
      const namespace = ldapNamespace(settings)
      const attempt = yield* throttle.reserve(throttleName(namespace, request.username), request.address).pipe(
        Effect.mapError(
          (throttled) =>
            new LdapSignInFailed({
              reason: "throttled",
              detail: `too many failures (${throttled.window})`,
              retryAfterSeconds: throttled.retryAfterSeconds,
              throttled
            })
        )
      )
      const outcome = yield* Effect.either(
        bounded(directory.authenticate(settings, request.username, request.password))
      )
      if (Either.isRight(outcome)) {
        yield* throttle.succeeded(attempt)
        return { identity: outcome.right, namespace, lockoutsEnded: attempt.lockoutsEnded } satisfies LdapSignedIn
      }
      const failure = outcome.left
      if (!COUNTED.has(failure.reason)) yield* throttle.release(attempt)
      return yield* new LdapSignInFailed({
        reason: failure.reason,
        detail: failure.detail,
        lockoutsEnded: attempt.lockoutsEnded
      })
    })

    return { signIn } as const
  }),
  dependencies: [LdapDirectory.Default]
}) {}
