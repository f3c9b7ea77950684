import { createHmac, randomBytes } from "node:crypto"
import { constantTimeEqual } from "../../crypto/hashing.js"
import { base32Encode } from "./base32.js"

/**
 * RFC 6238 TOTP with the parameters every authenticator app supports: HMAC-SHA1, 6 digits, 30-second
 * steps. Verification accepts the previous, current and next step (clock drift between phone and
 * server) and never a step at or before the last one accepted, so a code cannot be replayed.
 */
export const TOTP_STEP_SECONDS = 30
export const TOTP_DIGITS = 6
const SECRET_BYTES = 20
const WINDOW = 1

export const generateTotpSecret = (): Uint8Array => new Uint8Array(randomBytes(SECRET_BYTES))

export const stepAt = (epochMillis: number): number => Math.floor(epochMillis / 1000 / TOTP_STEP_SECONDS)

/** RFC 4226 HOTP value for `counter`, as zero-padded decimal text. */
export const hotp = (secret: Uint8Array, counter: number): string => {
  const message = Buffer.alloc(8)
  message.writeBigUInt64BE(BigInt(counter))
  const digest = createHmac("sha1", secret).update(message).digest()
  const offset = (digest[digest.length - 1] ?? 0) & 0x0f
  const binary = digest.readUInt32BE(offset) & 0x7fffffff
  return String(binary % 10 ** TOTP_DIGITS).padStart(TOTP_DIGITS, "0")
}

export const totpAt = (secret: Uint8Array, epochMillis: number): string => hotp(secret, stepAt(epochMillis))

/**
 * The step `code` matches within the window around `epochMillis`, if any, and only if it is later than
 * `lastAcceptedStep`. Every candidate is compared, so timing does not reveal which step matched.
 */
export const matchTotp = (
  secret: Uint8Array,
  code: string,
  epochMillis: number,
  lastAcceptedStep: number | undefined
): number | undefined => {
  if (!/^[0-9]{6}$/.test(code)) return undefined
  const now = stepAt(epochMillis)
  let matched: number | undefined
  for (let step = Math.max(0, now - WINDOW); step <= now + WINDOW; step++) {
    if (constantTimeEqual(hotp(secret, step), code) && matched === undefined) matched = step
  }
  return matched !== undefined && (lastAcceptedStep === undefined || matched > lastAcceptedStep) ? matched : undefined
}

/** The `otpauth://` URI authenticator apps import (Key Uri Format), e.g. from a QR code or by pasting. */
export const otpauthUri = (secret: Uint8Array, issuer: string, account: string): string => {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`
  const query = new URLSearchParams({
    secret: base32Encode(secret),
    issuer,
    algorithm: "SHA1",
    digits: String(TOTP_DIGITS),
    period: String(TOTP_STEP_SECONDS)
  })
  return `otpauth://totp/${label}?${query.toString()}`
}
