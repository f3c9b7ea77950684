import { Clock, Effect, Option, type Redacted } from "effect"
import { Sealer } from "../../crypto/sealer.js"
import { LocalCredentialRepo, totpSealContext } from "../../store/local-credentials.js"
import { UserRepo, type UserRow } from "../../store/users.js"
import { DUMMY_PASSWORD_HASH, hashPassword, needsRehash, verifyPassword } from "./password.js"
import { matchTotp } from "./totp.js"

/** Longer names are refused before any lookup or throttling: no account has one (init-admin makes "admin"). */
export const MAX_USERNAME_LENGTH = 256

export interface PasswordVerified {
  readonly user: UserRow
  /** False until the person has enrolled a TOTP second factor. */
  readonly totpEnrolled: boolean
}

/**
 * Sign-in with a local account: password first, then TOTP. Unknown names cost the same scrypt work as
 * wrong passwords, and neither says which it was.
 */
export class LocalAccounts extends Effect.Service<LocalAccounts>()("gateway/LocalAccounts", {
  effect: Effect.gen(function* () {
    const users = yield* UserRepo
    const credentials = yield* LocalCredentialRepo
    const sealer = yield* Sealer

    const checkPassword = Effect.fn("LocalAccounts.checkPassword")(function* (
      username: string,
      password: Redacted.Redacted<string>
    ) {
      const user = username.length > MAX_USERNAME_LENGTH ? Option.none() : yield* users.findLocalByUsername(username)
      const credential = Option.isSome(user) ? yield* credentials.find(user.value.id) : Option.none()
      const stored = Option.match(credential, { onNone: () => DUMMY_PASSWORD_HASH, onSome: (row) => row.password_hash })
      const matches = yield* verifyPassword(password, stored)
      if (!matches || Option.isNone(user) || Option.isNone(credential)) return Option.none<PasswordVerified>()
      // Best effort: a failed write leaves the old hash, which still verifies; the sign-in goes on.
      if (needsRehash(stored)) {
        yield* hashPassword(password).pipe(
          Effect.flatMap((next) => credentials.rehashPassword(user.value.id, stored, next)),
          Effect.catchAllDefect((defect) => Effect.logWarning("password rehash failed", defect))
        )
      }
      return Option.some<PasswordVerified>({
        user: user.value,
        totpEnrolled: credential.value.totp_secret_sealed !== null
      })
    })

    /** The id of the local account named `username`, if there is one (for security log lines). */
    const userIdOf = Effect.fn("LocalAccounts.userIdOf")(function* (username: string) {
      if (username.length > MAX_USERNAME_LENGTH) return Option.none<string>()
      return Option.map(yield* users.findLocalByUsername(username), (user) => user.id)
    })

    /** When the local account `username`'s password was last set (ms since epoch), if there is such an account. */
    const passwordSetAt = Effect.fn("LocalAccounts.passwordSetAt")(function* (username: string) {
      if (username.length > MAX_USERNAME_LENGTH) return Option.none<number>()
      const user = yield* users.findLocalByUsername(username)
      if (Option.isNone(user)) return Option.none<number>()
      const credential = yield* credentials.find(user.value.id)
      return Option.map(credential, (row) => row.password_changed_at.getTime())
    })

    /** True when `code` is the user's current TOTP code and was not used before. */
    const checkTotp = Effect.fn("LocalAccounts.checkTotp")(function* (userId: string, code: string) {
      const credential = yield* credentials.find(userId)
      if (Option.isNone(credential) || credential.value.totp_secret_sealed === null) return false
      const secret = yield* sealer.open(credential.value.totp_secret_sealed, totpSealContext(userId)).pipe(Effect.orDie)
      const now = yield* Clock.currentTimeMillis
      const step = matchTotp(secret, code, now, credential.value.totp_last_step ?? undefined)
      secret.fill(0)
      return step === undefined ? false : yield* credentials.acceptTotpStep(userId, step)
    })

    /**
     * Stores `secret` as the user's second factor once `code` proves the person's app holds it; false
     * also when a second factor was enrolled meanwhile (it is never replaced here).
     */
    const confirmEnrollment = Effect.fn("LocalAccounts.confirmEnrollment")(function* (
      userId: string,
      secret: Uint8Array,
      code: string
    ) {
      const now = yield* Clock.currentTimeMillis
      const step = matchTotp(secret, code, now, undefined)
      if (step === undefined) return false
      return yield* credentials.enrollTotp(userId, sealer.seal(secret, totpSealContext(userId)), step)
    })

    return { checkPassword, userIdOf, passwordSetAt, checkTotp, confirmEnrollment } as const
  })
}) {}
