import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const LocalCredentialRow = Schema.Struct({
  user_id: Schema.String,
  password_hash: Schema.String,
  /** Sealed with context `local_totp:<user_id>`; null until the person enrolled a second factor. */
  totp_secret_sealed: Schema.NullOr(Schema.String),
  totp_last_step: Schema.NullOr(Schema.Number),
  password_changed_at: StoredTimestamp
})
export type LocalCredentialRow = typeof LocalCredentialRow.Type

export const totpSealContext = (userId: string) => `local_totp:${userId}`

/** Persistence of `local_credentials`: password hashes and sealed TOTP secrets of local accounts. */
export class LocalCredentialRepo extends Effect.Service<LocalCredentialRepo>()("gateway/LocalCredentialRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const byUser = SqlSchema.findOne({
      Request: Schema.String,
      Result: LocalCredentialRow,
      execute: (userId) => sql`SELECT * FROM local_credentials WHERE user_id = ${userId}`
    })

    const find = Effect.fn("LocalCredentialRepo.find")((userId: string) => byUser(userId).pipe(Effect.orDie))

    /** Sets the password hash, creating the row for a new account. */
    const setPassword = Effect.fn("LocalCredentialRepo.setPassword")(function* (
      userId: string,
      passwordHash: string,
      at: Date
    ) {
      const changed = toStoredTimestamp(at)
      yield* sql`INSERT INTO local_credentials ${sql.insert({
        user_id: userId,
        password_hash: passwordHash,
        password_changed_at: changed
      })} ON CONFLICT (user_id) DO UPDATE SET password_hash = ${passwordHash}, password_changed_at = ${changed}`.pipe(
        Effect.orDie
      )
    })

    /**
     * Stores a confirmed TOTP secret (`acceptedStep` is the step that confirmed it), only while the
     * account has none: false when a second factor is already enrolled, so a sign-in that reached the
     * enrollment step (password only) can never replace an existing authenticator. `clearTotp`
     * (`gateway init-admin --reset-mfa`) is the only way to remove one.
     */
    const enrollTotp = Effect.fn("LocalCredentialRepo.enrollTotp")(function* (
      userId: string,
      sealedSecret: string,
      acceptedStep: number
    ) {
      const rows = yield* sql`UPDATE local_credentials SET totp_secret_sealed = ${sealedSecret},
        totp_last_step = ${acceptedStep}
        WHERE user_id = ${userId} AND totp_secret_sealed IS NULL RETURNING user_id`.pipe(Effect.orDie)
      return rows.length === 1
    })

    /**
     * Replaces a verified hash by one with current parameters; the password itself did not change, so
     * `password_changed_at` stays. Only if the stored hash is still `previous`: a password changed
     * meanwhile is never overwritten. True when replaced.
     */
    const rehashPassword = Effect.fn("LocalCredentialRepo.rehashPassword")(function* (
      userId: string,
      previous: string,
      next: string
    ) {
      const rows = yield* sql`UPDATE local_credentials SET password_hash = ${next}
        WHERE user_id = ${userId} AND password_hash = ${previous}
        RETURNING user_id`.pipe(Effect.orDie)
      return rows.length === 1
    })

    /** Removes the second factor; the next sign-in enrolls a new one. */
    const clearTotp = Effect.fn("LocalCredentialRepo.clearTotp")(function* (userId: string) {
      yield* sql`UPDATE local_credentials SET totp_secret_sealed = NULL, totp_last_step = NULL
        WHERE user_id = ${userId}`.pipe(Effect.orDie)
    })

    /**
     * Records `step` as used, only if it is later than the last accepted one; false means the code was
     * already used (also by a concurrent sign-in), so each TOTP code signs in once.
     */
    const acceptTotpStep = Effect.fn("LocalCredentialRepo.acceptTotpStep")(function* (userId: string, step: number) {
      const rows = yield* sql`UPDATE local_credentials SET totp_last_step = ${step}
        WHERE user_id = ${userId} AND (totp_last_step IS NULL OR totp_last_step < ${step})
        RETURNING user_id`.pipe(Effect.orDie)
      return rows.length === 1
    })

    /**
     * Both factors at once, as an enrolment link sets them (docs/local-accounts.md): the password hash
     * and a confirmed TOTP secret (`acceptedStep` confirmed it), replacing whatever the account had.
     */
    const setFactors = Effect.fn("LocalCredentialRepo.setFactors")(function* (
      userId: string,
      factors: { readonly passwordHash: string; readonly sealedSecret: string; readonly acceptedStep: number },
      at: Date
    ) {
      const changed = toStoredTimestamp(at)
      yield* sql`INSERT INTO local_credentials ${sql.insert({
        user_id: userId,
        password_hash: factors.passwordHash,
        totp_secret_sealed: factors.sealedSecret,
        totp_last_step: factors.acceptedStep,
        password_changed_at: changed
      })} ON CONFLICT (user_id) DO UPDATE SET password_hash = ${factors.passwordHash},
        totp_secret_sealed = ${factors.sealedSecret}, totp_last_step = ${factors.acceptedStep},
        password_changed_at = ${changed}`.pipe(Effect.orDie)
    })

    /** Removes both factors (a reset): the old password and authenticator stop working at once. */
    const remove = Effect.fn("LocalCredentialRepo.remove")(function* (userId: string) {
      yield* sql`DELETE FROM local_credentials WHERE user_id = ${userId}`.pipe(Effect.orDie)
    })

    return { find, setPassword, rehashPassword, enrollTotp, clearTotp, acceptTotpStep, setFactors, remove } as const
  })
}) {}
