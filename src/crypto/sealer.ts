import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto"
import { Data, Effect, Redacted } from "effect"
import { ConfigKey } from "./config-key.js"

/**
 * Sealed secrets: `v1.<base64url nonce>.<base64url ciphertext || tag>`, AES-256-GCM with a fresh 96-bit
 * nonce per seal. The associated data is the caller's context string (for example `signing_key:<kid>`),
 * so a value copied to another row or purpose does not open. See docs/secrets.md.
 */
const VERSION = "v1"
const NONCE_BYTES = 12
const TAG_BYTES = 16
const HKDF_INFO = "gateway sealed secrets v1"

/** A sealed value did not open. Deliberately carries no detail about the plaintext or the key. */
export class SealedSecretError extends Data.TaggedError("SealedSecretError")<{
  readonly context: string
  readonly reason: "malformed" | "unsupported version" | "authentication failed"
}> {
  override get message(): string {
    return (
      `sealed secret "${this.context}" could not be opened (${this.reason}): ` +
      "the data was altered, belongs to another record, or was sealed with a different GATEWAY_CONFIG_KEY"
    )
  }
}

// The raw configuration key is never used as a cipher key directly: HKDF separates purposes, so a
// later use of the same configuration key (another derived key) cannot collide with this one.
const deriveKey = (configKey: Uint8Array): Buffer =>
  Buffer.from(hkdfSync("sha256", configKey, new Uint8Array(0), HKDF_INFO, 32))

export interface SealerApi {
  readonly seal: (plaintext: Uint8Array | string, context: string) => string
  readonly open: (sealed: string, context: string) => Effect.Effect<Uint8Array, SealedSecretError>
}

export const makeSealer = (configKey: Redacted.Redacted<Uint8Array>): SealerApi => {
  const key = deriveKey(Redacted.value(configKey))

  const seal = (plaintext: Uint8Array | string, context: string): string => {
    const nonce = randomBytes(NONCE_BYTES)
    const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES })
    cipher.setAAD(Buffer.from(context, "utf8"))
    const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
    return `${VERSION}.${nonce.toString("base64url")}.${body.toString("base64url")}`
  }

  const open = (sealed: string, context: string): Effect.Effect<Uint8Array, SealedSecretError> =>
    Effect.suspend(() => {
      const parts = sealed.split(".")
      if (parts.length !== 3) return new SealedSecretError({ context, reason: "malformed" })
      const [version, nonceText, bodyText] = parts as [string, string, string]
      if (version !== VERSION) return new SealedSecretError({ context, reason: "unsupported version" })
      const nonce = Buffer.from(nonceText, "base64url")
      const body = Buffer.from(bodyText, "base64url")
      if (nonce.length !== NONCE_BYTES || body.length < TAG_BYTES) {
        return new SealedSecretError({ context, reason: "malformed" })
      }
      return Effect.try({
        try: () => {
          const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES })
          decipher.setAAD(Buffer.from(context, "utf8"))
          decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
          const plaintext = Buffer.concat([
            decipher.update(body.subarray(0, body.length - TAG_BYTES)),
            decipher.final()
          ])
          return new Uint8Array(plaintext)
        },
        catch: () => new SealedSecretError({ context, reason: "authentication failed" })
      })
    })

  return { seal, open }
}

/** Seals and opens secrets with the key derived from the deployment's `ConfigKey`. */
export class Sealer extends Effect.Service<Sealer>()("gateway/Sealer", {
  effect: Effect.map(ConfigKey, makeSealer)
}) {}
