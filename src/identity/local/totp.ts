import { randomBytes } from "node:crypto"
import { Secret, TOTP } from "otpauth"

/**
 * RFC 6238 TOTP with the parameters every authenticator app supports: HMAC-SHA1, 6 digits, 30-second
 * steps, computed by the `otpauth` library (HOTP, TOTP, base32 and the Key Uri Format written once, by a
 * project that does only that). Verification accepts the previous, current and next step (clock drift
 * between phone and server) and never a step at or before the last one accepted, so a code cannot be
 * replayed; that rule is the gateway's own.
 */
export const TOTP_STEP_SECONDS = 30
export const TOTP_DIGITS = 6
const SECRET_BYTES = 20
const WINDOW = 1

const totpOf = (secret: Uint8Array, issuer = "", account = "") =>
  new TOTP({
    issuer,
    label: account,
    algorithm: "SHA1",
    digits: TOTP_DIGITS,
    period: TOTP_STEP_SECONDS,
    secret: new Secret({ buffer: secret.slice().buffer })
  })

export const generateTotpSecret = (): Uint8Array => new Uint8Array(randomBytes(SECRET_BYTES))

export const stepAt = (epochMillis: number): number =>
  TOTP.counter({ period: TOTP_STEP_SECONDS, timestamp: epochMillis })

export const totpAt = (secret: Uint8Array, epochMillis: number): string =>
  totpOf(secret).generate({ timestamp: epochMillis })

/**
 * The step `code` matches within the window around `epochMillis`, if any, and only if it is later than
 * `lastAcceptedStep`. The library compares every candidate in constant time.
 */
export const matchTotp = (
  secret: Uint8Array,
  code: string,
  epochMillis: number,
  lastAcceptedStep: number | undefined
): number | undefined => {
  if (!/^[0-9]{6}$/.test(code)) return undefined
  const delta = totpOf(secret).validate({ token: code, timestamp: epochMillis, window: WINDOW })
  if (delta === null) return undefined
  const matched = stepAt(epochMillis) + delta
  return lastAcceptedStep === undefined || matched > lastAcceptedStep ? matched : undefined
}

/** The secret as people and authenticator apps read it: RFC 4648 base32 without padding. */
export const base32Encode = (secret: Uint8Array): string => new Secret({ buffer: secret.slice().buffer }).base32

/** Decodes base32 (case-insensitive; spaces and padding ignored); undefined when it is not base32. */
export const base32Decode = (text: string): Uint8Array | undefined => {
  const clean = text.replace(/[\s=]/g, "").toUpperCase()
  if (!/^[A-Z2-7]*$/.test(clean)) return undefined
  return new Uint8Array(Secret.fromBase32(clean).buffer)
}

/** The `otpauth://` URI authenticator apps import (Key Uri Format), e.g. from a QR code or by pasting. */
export const otpauthUri = (secret: Uint8Array, issuer: string, account: string): string =>
  totpOf(secret, issuer, account).toString()
