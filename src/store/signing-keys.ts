import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/** The public half of a signing key exactly as published in the JWKS. */
export const PublicSigningJwk = Schema.Struct({
  kty: Schema.Literal("OKP"),
  crv: Schema.Literal("Ed25519"),
  x: Schema.String,
  kid: Schema.String,
  alg: Schema.Literal("EdDSA"),
  use: Schema.Literal("sig")
})
export type PublicSigningJwk = typeof PublicSigningJwk.Type

export const SigningKeyRow = Schema.Struct({
  kid: Schema.String,
  alg: Schema.Literal("EdDSA"),
  public_jwk: Schema.parseJson(PublicSigningJwk),
  /** The private JWK, sealed with context `signing_key:<kid>` (docs/secrets.md). */
  sealed_private: Schema.String,
  status: Schema.Literal("active", "retired"),
  created_at: StoredTimestamp,
  retired_at: Schema.NullOr(StoredTimestamp)
})
export type SigningKeyRow = typeof SigningKeyRow.Type

export interface NewSigningKey {
  readonly kid: string
  readonly publicJwk: PublicSigningJwk
  readonly sealedPrivate: string
  readonly createdAt: Date
}

/** Persistence of `signing_keys`. Database failures are defects here: no caller can repair them. */
export class SigningKeyRepo extends Effect.Service<SigningKeyRepo>()("gateway/SigningKeyRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const selectActive = SqlSchema.findOne({
      Request: Schema.Void,
      Result: SigningKeyRow,
      execute: () => sql`SELECT * FROM signing_keys WHERE status = 'active'`
    })

    const selectPublished = SqlSchema.findAll({
      Request: Schema.String,
      Result: SigningKeyRow,
      execute: (retiredAfter) =>
        sql`SELECT * FROM signing_keys WHERE status = 'active' OR retired_at > ${retiredAfter} ORDER BY created_at DESC`
    })

    const findActive: Effect.Effect<Option.Option<SigningKeyRow>> = selectActive(undefined).pipe(Effect.orDie)

    /**
     * Inserts `key` as the active key unless one already exists (the partial unique index decides), then
     * returns whichever key is active. Concurrent first starts therefore all end up with the same key.
     */
    const insertActiveOrGetExisting = Effect.fn("SigningKeyRepo.insertActiveOrGetExisting")(function* (
      key: NewSigningKey
    ) {
      const row = {
        kid: key.kid,
        alg: "EdDSA",
        public_jwk: JSON.stringify(key.publicJwk),
        sealed_private: key.sealedPrivate,
        status: "active",
        created_at: toStoredTimestamp(key.createdAt)
      }
      const active = yield* sql`INSERT INTO signing_keys ${sql.insert(row)} ON CONFLICT DO NOTHING`.pipe(
        Effect.zipRight(selectActive(undefined)),
        sql.withTransaction,
        Effect.orDie
      )
      return yield* Option.match(active, {
        onNone: () => Effect.dieMessage("signing_keys has no active key right after inserting one"),
        onSome: Effect.succeed
      })
    })

    /** Keys the JWKS must publish: the active one and those retired after `retiredAfter`. */
    const listPublished = Effect.fn("SigningKeyRepo.listPublished")(function* (retiredAfter: Date) {
      return yield* selectPublished(toStoredTimestamp(retiredAfter)).pipe(Effect.orDie)
    })

    return { findActive, insertActiveOrGetExisting, listPublished } as const
  })
}) {}
