import { Effect } from "effect"
import { LocalAccounts } from "../../identity/local/accounts.js"
import { clientAddress } from "../client-address.js"
import { seeOther } from "../pages/html.js"
import type { LoginTransaction } from "../pending.js"
import { authSettings } from "../settings.js"
import { LoginThrottle } from "../throttle.js"
import { afterAuthentication } from "./finish.js"
import { readPageForm } from "./form.js"
import { throttledPage } from "./local.js"
import { answerPage } from "./page-response.js"
import { stagePage } from "./sign-in.js"
import { lockoutsEnded, signInFailed, signInThrottled } from "./sign-in-events.js"
import { postedTransaction } from "./transaction.js"

/**
 * The second factor, shared by verification (`POST /sso/mfa`) and enrollment (`POST /sso/mfa/enroll`):
 * a wrong code counts as a failed sign-in for the account and the address, like a wrong password.
 */
const secondFactor = (
  stage: "mfa" | "enroll",
  verify: (transaction: LoginTransaction, userId: string, code: string) => Effect.Effect<boolean, never, LocalAccounts>
) =>
  answerPage(
    Effect.gen(function* () {
      const settings = yield* authSettings
      const params = yield* readPageForm
      const transaction = yield* postedTransaction(settings, params)
      const userId = transaction.userId
      const username = transaction.username ?? ""
      if (transaction.stage !== stage || userId === undefined) {
        return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
      }
      const throttle = yield* LoginThrottle
      // Counted before the code is checked, like a password (src/auth/throttle.ts).
      const who = { address: yield* clientAddress, transaction, userId }
      const event = stage === "mfa" ? "totp" : "totp_enrollment"
      const attempt = yield* Effect.either(throttle.reserve(username, who.address))
      if (attempt._tag === "Left") {
        yield* signInThrottled(who, event, attempt.left)
        return throttledPage(settings, transaction, attempt.left.retryAfterSeconds)
      }
      yield* lockoutsEnded(who, attempt.right)
      const code = params.single("code")
      const text = code._tag === "Value" ? code.value.replace(/\s/g, "") : ""
      if (!(yield* verify(transaction, userId, text))) {
        yield* signInFailed(who, event)
        return stagePage(settings, transaction, "That code is not valid. Use the current code from your app.", 401)
      }
      yield* throttle.succeeded(attempt.right)
      return yield* afterAuthentication(settings, transaction, userId, "local")
    })
  ).pipe(Effect.withSpan(`secondFactor.${stage}`))

export const mfaEndpoint = secondFactor("mfa", (_transaction, userId, code) =>
  Effect.flatMap(LocalAccounts, (accounts) => accounts.checkTotp(userId, code))
)

export const enrollEndpoint = secondFactor("enroll", (transaction, userId, code) =>
  transaction.enrollSecret === undefined
    ? Effect.succeed(false)
    : Effect.flatMap(LocalAccounts, (accounts) => accounts.confirmEnrollment(userId, transaction.enrollSecret!, code))
)
