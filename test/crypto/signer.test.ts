import { createPrivateKey, generateKeyPairSync } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, type Redacted, Scope, TestClock } from "effect"
import * as jose from "jose"
import type { StorageConfig } from "../../src/config/schema.js"
import { Signer, TokenInvalid } from "../../src/crypto/signer.js"
import { randomConfigKey, type StoreKindUnderTest, storeKinds, storeLayer, withStorage } from "../support/databases.js"

const ISSUER = "https://gateway.example/sso"
const AUDIENCE = "https://gateway.example/mcp"
const options = { issuer: ISSUER, audience: AUDIENCE, subject: "user-1", expiresInSeconds: 600 }

const rejection = (token: string, verify = { issuer: ISSUER, audience: AUDIENCE }) =>
  Effect.flatMap(Signer, (signer) => Effect.flip(signer.verify(token, verify))).pipe(
    Effect.tap((error) => expect(error).toBeInstanceOf(TokenInvalid))
  )

const signerOn = (storage: StorageConfig, key: Redacted.Redacted<Uint8Array>) =>
  Effect.map(Layer.build(Signer.Default.pipe(Layer.provideMerge(storeLayer(storage, key)))), Context.get(Signer))

// One database of each kind and one configuration key for the file: every test opens the Signer on it
// under its own TestClock, and finds the key the first one created. (Not @effect/vitest's `layer()`: it
// rebinds the shared `it.effect`/`it.scoped` to its runtime for every file a worker runs after it —
// biome.json forbids it.)
const files = Effect.runSync(Scope.make())
afterAll(() => Effect.runPromise(Scope.close(files, Exit.void)))
const fileKey = randomConfigKey()
const fileStorages = new Map<StoreKindUnderTest, Promise<StorageConfig>>()
const fileStorage = (kind: StoreKindUnderTest) =>
  Effect.promise(() => {
    const known = fileStorages.get(kind)
    if (known !== undefined) return known
    const created = Effect.runPromise(Scope.extend(withStorage(kind), files))
    fileStorages.set(kind, created)
    return created
  })
const sharedSigner = (kind: StoreKindUnderTest) =>
  Layer.unwrapEffect(
    Effect.map(fileStorage(kind), (storage) => Signer.Default.pipe(Layer.provideMerge(storeLayer(storage, fileKey))))
  )

describe.each(storeKinds)("Signer on %s", (kind) => {
  it.effect("signs RFC 9068 access tokens that verify", () =>
    Effect.gen(function* () {
      const signer = yield* Signer
      yield* TestClock.setTime(1_700_000_000_000)
      const token = yield* signer.sign({ scope: "tools:read", iss: "https://evil.example" }, options)
      const header = jose.decodeProtectedHeader(token)
      expect(header).toEqual({ alg: "EdDSA", kid: signer.kid, typ: "at+jwt" })
      const payload = yield* signer.verify(token, { issuer: ISSUER, audience: AUDIENCE })
      expect(payload).toMatchObject({ iss: ISSUER, aud: AUDIENCE, sub: "user-1", scope: "tools:read" })
      expect(payload.iat).toBe(1_700_000_000)
      expect(payload.exp).toBe(1_700_000_600)
      expect(payload.jti).toMatch(/^[A-Za-z0-9_-]{22}$/)
      const again = yield* signer.sign({}, options)
      expect(jose.decodeJwt(again).jti).not.toBe(payload.jti)
    }).pipe(Effect.provide(sharedSigner(kind)))
  )

  it.effect("publishes only the public key, identified by its RFC 7638 thumbprint", () =>
    Effect.gen(function* () {
      const signer = yield* Signer
      expect(signer.jwks.keys).toHaveLength(1)
      const [jwk] = signer.jwks.keys
      expect(jwk).toEqual({
        kty: "OKP",
        crv: "Ed25519",
        x: expect.any(String),
        kid: signer.kid,
        alg: "EdDSA",
        use: "sig"
      })
      expect(yield* Effect.promise(() => jose.calculateJwkThumbprint(jwk!, "sha256"))).toBe(signer.kid)
      expect(yield* signer.ready).toBe(true)
    }).pipe(Effect.provide(sharedSigner(kind)))
  )

  it.effect("rejects a token at its expiry second, not before", () =>
    Effect.gen(function* () {
      const signer = yield* Signer
      const token = yield* signer.sign({}, options)
      yield* TestClock.adjust("599 seconds")
      yield* signer.verify(token, { issuer: ISSUER, audience: AUDIENCE })
      yield* TestClock.adjust("1 second")
      expect((yield* rejection(token)).code).toBe("ERR_JWT_EXPIRED")
    }).pipe(Effect.provide(sharedSigner(kind)))
  )

  it.effect("rejects another audience, issuer or token type", () =>
    Effect.gen(function* () {
      const signer = yield* Signer
      const token = yield* signer.sign({}, options)
      expect((yield* rejection(token, { issuer: ISSUER, audience: "https://other.example/mcp" })).code).toBe(
        "ERR_JWT_CLAIM_VALIDATION_FAILED"
      )
      expect((yield* rejection(token, { issuer: "https://other.example/sso", audience: AUDIENCE })).code).toBe(
        "ERR_JWT_CLAIM_VALIDATION_FAILED"
      )
      const idToken = yield* signer.sign({}, { ...options, type: "JWT" })
      expect((yield* rejection(idToken)).code).toBe("ERR_JWT_CLAIM_VALIDATION_FAILED")
      yield* signer.verify(idToken, { issuer: ISSUER, audience: AUDIENCE, type: "JWT" })
    }).pipe(Effect.provide(sharedSigner(kind)))
  )

  it.effect("rejects alg none, HS256 keyed with the public key, foreign keys and altered payloads", () =>
    Effect.gen(function* () {
      const signer = yield* Signer
      const claims = { iss: ISSUER, aud: AUDIENCE, sub: "admin", iat: 0, exp: 600, jti: "j" }
      const unsecured = new jose.UnsecuredJWT(claims).encode()
      expect((yield* rejection(unsecured)).code).toBe("ERR_JOSE_ALG_NOT_ALLOWED")

      const publicJwk = signer.jwks.keys[0]!
      for (const secret of [Buffer.from(publicJwk.x!, "base64url"), Buffer.from(JSON.stringify(publicJwk))]) {
        const forged = yield* Effect.promise(() =>
          new jose.SignJWT(claims).setProtectedHeader({ alg: "HS256", kid: signer.kid, typ: "at+jwt" }).sign(secret)
        )
        expect((yield* rejection(forged)).code).toBe("ERR_JOSE_ALG_NOT_ALLOWED")
      }

      const foreign = createPrivateKey(
        generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" })
      )
      const impostor = yield* Effect.promise(() =>
        new jose.SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: signer.kid, typ: "at+jwt" }).sign(foreign)
      )
      expect((yield* rejection(impostor)).code).toBe("ERR_JWS_SIGNATURE_VERIFICATION_FAILED")

      const [head, , signature] = (yield* signer.sign({}, options)).split(".")
      const altered = Buffer.from(JSON.stringify({ ...claims, sub: "someone-else" })).toString("base64url")
      expect((yield* rejection(`${head}.${altered}.${signature}`)).code).toBe("ERR_JWS_SIGNATURE_VERIFICATION_FAILED")
    }).pipe(Effect.provide(sharedSigner(kind)))
  )

  it.effect("refuses a non-positive lifetime as a programming error", () =>
    Effect.gen(function* () {
      const signer = yield* Signer
      const exit = yield* Effect.exit(signer.sign({}, { ...options, expiresInSeconds: 0 }))
      expect(exit._tag).toBe("Failure")
    }).pipe(Effect.provide(sharedSigner(kind)))
  )

  it.scoped("keeps its key across restarts", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const key = randomConfigKey()
      const first = yield* Effect.scoped(signerOn(storage, key))
      const second = yield* Effect.scoped(signerOn(storage, key))
      expect(second.kid).toBe(first.kid)
      expect(second.jwks).toEqual(first.jwks)
      const token = yield* first.sign({}, options)
      yield* second.verify(token, { issuer: ISSUER, audience: AUDIENCE })
    })
  )
})

describe("Signer on postgres, concurrent first start", () => {
  it.scoped("creates exactly one active key", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage("postgres")
      const key = randomConfigKey()
      // Open the stores first (their creation is serialized by a lock), so the six signers race for real.
      const stores = yield* Effect.all(
        Array.from({ length: 6 }, () => Layer.build(storeLayer(storage, key))),
        { concurrency: "unbounded" }
      )
      const signers = yield* Effect.all(
        stores.map((store) =>
          Effect.map(Layer.build(Signer.Default.pipe(Layer.provide(Layer.succeedContext(store)))), Context.get(Signer))
        ),
        { concurrency: "unbounded" }
      )
      expect(new Set(signers.map((signer) => signer.kid)).size).toBe(1)
      const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT kid, status FROM signing_keys`).pipe(
        Effect.provide(storeLayer(storage, key))
      )
      expect(rows).toEqual([{ kid: signers[0]?.kid, status: "active" }])
    })
  )
})
