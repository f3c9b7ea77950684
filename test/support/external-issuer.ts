import { createServer } from "node:https"
import * as jose from "jose"
import { listenRestartable } from "./restartable.js"
import type { TestCa } from "./test-ca.js"

/**
 * A stand-in for an external token issuer (auth.mode `external`): it serves its key set over HTTPS on
 * loopback with a certificate from a throw-away CA, counts the fetches, and mints JWTs. Its key set can
 * change (rotation), fail (HTTP 500) or go away (stopped: connections refused).
 */
export interface SigningKey {
  readonly kid: string
  readonly alg: string
  readonly privateKey: jose.CryptoKey
  readonly publicJwk: jose.JWK
}

export interface MintOptions {
  readonly issuer?: string
  readonly audience?: string
  readonly subject?: string
  readonly scope?: string
  readonly expiresInSeconds?: number
  /** Put this `kid` in the header instead of the key's own (a key the issuer never published). */
  readonly kid?: string
}

export interface ExternalIssuer {
  readonly issuer: string
  readonly jwksUrl: string
  /** Key set requests served so far. */
  fetches(): number
  newKey(alg?: "ES256" | "RS256" | "EdDSA" | "PS256"): Promise<SigningKey>
  /** Replaces the published key set. */
  publish(keys: ReadonlyArray<SigningKey>): void
  /** true: answer every key set request with HTTP 500. */
  failing(on: boolean): void
  mint(key: SigningKey, audience: string, options?: MintOptions): Promise<string>
  stop(): Promise<void>
  start(): Promise<void>
}

let counter = 0

export const startExternalIssuer = async (ca: TestCa): Promise<ExternalIssuer> => {
  let published: ReadonlyArray<SigningKey> = []
  let fetches = 0
  let fail = false
  const handler: Parameters<typeof createServer>[1] = (request, response) => {
    if (request.url !== "/jwks") {
      response.writeHead(404).end()
      return
    }
    fetches++
    if (fail) {
      response.writeHead(500).end()
      return
    }
    response.writeHead(200, { "content-type": "application/jwk-set+json" })
    response.end(JSON.stringify({ keys: published.map((key) => key.publicJwk) }))
  }
  const listening = await listenRestartable(() => createServer({ key: ca.key, cert: ca.cert }, handler))
  const port = listening.port
  const issuer = "https://issuer.test.example"
  return {
    issuer,
    jwksUrl: `https://127.0.0.1:${port}/jwks`,
    fetches: () => fetches,
    newKey: async (alg = "ES256") => {
      const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true })
      const kid = `key-${++counter}`
      return { kid, alg, privateKey, publicJwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: "sig" } }
    },
    publish: (keys) => {
      published = keys
    },
    failing: (on) => {
      fail = on
    },
    mint: (key, audience, options = {}) =>
      new jose.SignJWT({ scope: options.scope ?? "", client_id: "external-client" })
        .setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid, typ: "at+jwt" })
        .setIssuer(options.issuer ?? issuer)
        .setAudience(options.audience ?? audience)
        .setSubject(options.subject ?? "external-user")
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + (options.expiresInSeconds ?? 600))
        .sign(key.privateKey),
    stop: listening.stop,
    start: listening.start
  }
}
