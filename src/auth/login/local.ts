import { HttpServerResponse } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { LocalAccounts, MAX_USERNAME_LENGTH } from "../../identity/local/accounts.js"
import { MAX_PASSWORD_LENGTH } from "../../identity/local/password.js"
import { generateTotpSecret } from "../../identity/local/totp.js"
import { clientAddress } from "../client-address.js"
import { seeOther } from "../pages/html.js"
import { PendingAuthorizations } from "../pending.js"
import { type AuthSettings, authSettings } from "../settings.js"
import { LoginThrottle } from "../throttle.js"
import { readPageForm } from "./form.js"
import { answerPage } from "./page-response.js"
import { stagePage } from "./sign-in.js"
import { lockoutsEnded, signInFailed, signInThrottled } from "./sign-in-events.js"
import { postedTransaction } from "./transaction.js"

const WRONG = "Wrong user name or password."

/** Too many failures: the same page, 429 with `Retry-After`, and no password checked at all. */
export const throttledPage = (
  settings: AuthSettings,
  transaction: Parameters<typeof stagePage>[1],
  retryAfterSeconds: number
) =>
  HttpServerResponse.setHeader(
    stagePage(
      settings,
      transaction,
      `Too many failed attempts. Try again in ${Math.ceil(retryAfterSeconds / 60)} minute(s).`,
      429
    ),
    "retry-after",
    String(retryAfterSeconds)
  )

/**
 * `POST /sso/login/local`: the first factor. On success the transaction moves to the TOTP step (or to
 * enrollment when the account has none yet); the sign-in is complete only after it.
 */
export const localLoginEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const params = yield* readPageForm
    const transaction = yield* postedTransaction(settings, params)
    if (transaction.stage !== "sign_in") return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
    const username = params.single("username")
    const password = params.single("password")
    // Out-of-bounds input is refused before it reaches the throttle's bookkeeping or scrypt.
    if (
      username._tag !== "Value" ||
      password._tag !== "Value" ||
      username.value.length > MAX_USERNAME_LENGTH ||
      password.value.length > MAX_PASSWORD_LENGTH
    ) {
      return stagePage(settings, transaction, "Enter your user name and password.", 400)
    }
    const throttle = yield* LoginThrottle
    const accounts = yield* LocalAccounts
    const address = yield* clientAddress
    let attempt = yield* Effect.either(throttle.reserve(username.value, address))
    if (attempt._tag === "Left") {
      // Failures counted before an operator set a new password (init-admin --reset, even with this
      // gateway running) were guesses at the old one: they no longer hold the account back.
      const setAt = yield* accounts.passwordSetAt(username.value)
      if (Option.isSome(setAt) && (yield* throttle.forgiveBefore(username.value, address, setAt.value))) {
        attempt = yield* Effect.either(throttle.reserve(username.value, address))
      }
    }
    const who = { address, transaction, userId: undefined as string | undefined }
    if (attempt._tag === "Left") {
      yield* signInThrottled(
        { ...who, userId: Option.getOrUndefined(yield* accounts.userIdOf(username.value)) },
        "password",
        attempt.left
      )
      return throttledPage(settings, transaction, attempt.left.retryAfterSeconds)
    }

    const verified = yield* accounts.checkPassword(username.value, Redacted.make(password.value))
    // A wrong password keeps its counted attempt; a right one gives it back (the second factor counts anew).
    if (Option.isNone(verified)) {
      const failed = { ...who, userId: Option.getOrUndefined(yield* accounts.userIdOf(username.value)) }
      yield* lockoutsEnded(failed, attempt.right)
      yield* signInFailed(failed, "password")
      return stagePage(settings, transaction, WRONG, 401)
    }
    yield* lockoutsEnded({ ...who, userId: verified.value.user.id }, attempt.right)
    yield* throttle.release(attempt.right)
    const { user, totpEnrolled } = verified.value
    yield* (yield* PendingAuthorizations).update({
      ...transaction,
      stage: totpEnrolled ? "mfa" : "enroll",
      userId: user.id,
      username: username.value,
      ...(totpEnrolled ? {} : { enrollSecret: generateTotpSecret() })
    })
    return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
  })
).pipe(Effect.withSpan("localLoginEndpoint"))
