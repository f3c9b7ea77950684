import { randomBytes } from "node:crypto"
import { Clock, Data, Effect, Option, Redacted } from "effect"
import * as jose from "jose"
import { SigningKeyRepo, type SigningKeyRow } from "../store/signing-keys.js"
import { Sealer } from "./sealer.js"
import { generateSigningKey, importPrivateKey } from "./signing-key.js"

/** Spec Limits: access JWTs live at most 10 minutes; a retired key stays published at least that long. */
const RETIRED_KEY_PUBLISHED_MS = 10 * 60 * 1000
const ALGORITHMS = ["EdDSA"]
/** RFC 9068 access-token type; `verify` demands it by default so other token kinds cannot pass as one. */
const ACCESS_TOKEN_TYPE = "at+jwt"

export class TokenInvalid extends Data.TaggedError("TokenInvalid")<{
  /** jose's error code, e.g. `ERR_JWT_EXPIRED`, for logs and tests; the message is safe to log. */
  readonly code: string
  readonly message: string
}> {}

export interface SignOptions {
  readonly issuer: string
  readonly audience: string
  readonly subject: string
  readonly expiresInSeconds: number
  /** The `typ` header; default `at+jwt`. */
  readonly type?: string
}

export interface VerifyOptions {
  readonly issuer: string
  readonly audience: string
  /** The required `typ` header; default `at+jwt`. */
  readonly type?: string
}

const sealContext = (kid: string) => `signing_key:${kid}`

const toTokenInvalid = (error: unknown): TokenInvalid =>
  error instanceof jose.errors.JOSEError
    ? new TokenInvalid({ code: error.code, message: error.message })
    : new TokenInvalid({ code: "ERR_UNKNOWN", message: "token could not be verified" })

/**
 * The gateway's JWT signer and verifier (docs/signing-keys.md). The active Ed25519 key is
 * loaded from `signing_keys` (private half sealed with the configuration key) or created on first start.
 */
export class Signer extends Effect.Service<Signer>()("gateway/Signer", {
  effect: Effect.gen(function* () {
    const repo = yield* SigningKeyRepo
    const sealer = yield* Sealer

    const create = Effect.gen(function* () {
      const generated = yield* generateSigningKey
      return yield* repo.insertActiveOrGetExisting({
        kid: generated.kid,
        publicJwk: generated.publicJwk,
        sealedPrivate: sealer.seal(Redacted.value(generated.privateJwkJson), sealContext(generated.kid)),
        createdAt: new Date(yield* Clock.currentTimeMillis)
      })
    })
    const active: SigningKeyRow = yield* Effect.flatMap(
      repo.findActive,
      Option.match({ onNone: () => create, onSome: Effect.succeed })
    )
    const opened = yield* sealer.open(active.sealed_private, sealContext(active.kid))
    const privateKey = yield* importPrivateKey(new TextDecoder().decode(opened), active.public_jwk)
    opened.fill(0)

    const published = yield* repo.listPublished(new Date((yield* Clock.currentTimeMillis) - RETIRED_KEY_PUBLISHED_MS))
    const jwks: jose.JSONWebKeySet = { keys: published.map((row) => ({ ...row.public_jwk })) }
    const keySet = jose.createLocalJWKSet(jwks)

    const sign = Effect.fn("Signer.sign")(function* (claims: jose.JWTPayload, options: SignOptions) {
      if (!Number.isInteger(options.expiresInSeconds) || options.expiresInSeconds <= 0) {
        return yield* Effect.dieMessage(`Signer.sign: expiresInSeconds must be a positive integer`)
      }
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const token = new jose.SignJWT(claims)
        .setProtectedHeader({ alg: "EdDSA", kid: active.kid, typ: options.type ?? ACCESS_TOKEN_TYPE })
        .setIssuer(options.issuer)
        .setAudience(options.audience)
        .setSubject(options.subject)
        .setIssuedAt(now)
        .setExpirationTime(now + options.expiresInSeconds)
        .setJti(randomBytes(16).toString("base64url"))
      return yield* Effect.promise(() => token.sign(privateKey))
    })

    const verify = Effect.fn("Signer.verify")(function* (token: string, options: VerifyOptions) {
      // The Effect clock, not the wall clock, so TestClock drives expiry in tests.
      const currentDate = new Date(yield* Clock.currentTimeMillis)
      const { payload } = yield* Effect.tryPromise({
        try: () =>
          jose.jwtVerify(token, keySet, {
            algorithms: ALGORITHMS,
            issuer: options.issuer,
            audience: options.audience,
            typ: options.type ?? ACCESS_TOKEN_TYPE,
            requiredClaims: ["exp", "iat", "sub", "jti"],
            // One process signs and verifies on one clock; tolerance would stretch the 10-minute limit.
            clockTolerance: 0,
            currentDate
          }),
        catch: toTokenInvalid
      })
      return payload
    })

    // The key was loaded at start and is never replaced while the process runs: the verifier is ready.
    // Whether the store answers is readiness's `store_ready` (src/store/health.ts), measured without a
    // query per probe; a lookup here made every probe a query, and named a database outage the verifier's.
    const ready: Effect.Effect<boolean> = Effect.succeed(true)

    return { kid: active.kid, sign, verify, jwks, ready } as const
  }),
  dependencies: [SigningKeyRepo.Default]
}) {}
