import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto"
import { Effect, Redacted, Schema } from "effect"
import * as jose from "jose"
import type { PublicSigningJwk } from "../store/signing-keys.js"

/** A private Ed25519 JWK as `KeyObject.export({ format: "jwk" })` writes it. */
const PrivateEd25519Jwk = Schema.parseJson(
  Schema.Struct({ kty: Schema.Literal("OKP"), crv: Schema.Literal("Ed25519"), x: Schema.String, d: Schema.String })
)

export interface GeneratedSigningKey {
  readonly kid: string
  readonly publicJwk: PublicSigningJwk
  /** JSON of the private JWK, to be sealed before it goes anywhere. */
  readonly privateJwkJson: Redacted.Redacted<string>
}

/** A new Ed25519 key; `kid` is its RFC 7638 thumbprint, so the id cannot disagree with the key. */
export const generateSigningKey: Effect.Effect<GeneratedSigningKey> = Effect.gen(function* () {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  const { x } = publicKey.export({ format: "jwk" })
  if (x === undefined) return yield* Effect.dieMessage("Ed25519 public key exported without x")
  const kid = yield* Effect.promise(() => jose.calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x }, "sha256"))
  return {
    kid,
    publicJwk: { kty: "OKP", crv: "Ed25519", x, kid, alg: "EdDSA", use: "sig" },
    privateJwkJson: Redacted.make(JSON.stringify(privateKey.export({ format: "jwk" })))
  }
})

/**
 * The signing key from an opened private JWK. A private half that does not match the stored public half
 * would sign tokens nobody can verify, so it is a defect, not something to limp along with.
 */
export const importPrivateKey = (privateJwkJson: string, publicJwk: PublicSigningJwk): Effect.Effect<KeyObject> =>
  Effect.gen(function* () {
    const jwk = yield* Schema.decode(PrivateEd25519Jwk)(privateJwkJson).pipe(
      Effect.orDieWith(() => new Error(`signing key ${publicJwk.kid}: the private key is not an Ed25519 JWK`))
    )
    if (jwk.x !== publicJwk.x) {
      return yield* Effect.dieMessage(`signing key ${publicJwk.kid}: private and public halves do not match`)
    }
    return createPrivateKey({ key: { ...jwk }, format: "jwk" })
  })
