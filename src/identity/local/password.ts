import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Effect, Redacted } from "effect"

/**
 * Local passwords: scrypt (RFC 7914) with a fresh 16-byte salt per hash, stored as
 * `scrypt$<log2 N>$<r>$<p>$<salt b64url>$<hash b64url>`. Every hash carries its parameters, so raising
 * them changes new hashes only and older ones still verify. N = 2^15, r = 8, p = 3 is one of the
 * equivalent settings the OWASP Password Storage Cheat Sheet lists (32 MiB per hash; p adds time, not
 * memory). Throttling bounds how many run at once (src/auth/throttle.ts).
 */
const LOG_N = 15
const R = 8
const P = 3
const KEY_BYTES = 32
const SALT_BYTES = 16
// Node refuses scrypt above `maxmem` (default 32 MiB, exactly 128·N·r here): leave headroom.
const MAX_MEM = 64 * 1024 * 1024

/** Longer inputs are refused before hashing: scrypt's cost is fixed, but parsing a megabyte form is not. */
export const MAX_PASSWORD_LENGTH = 1024
export const MIN_PASSWORD_LENGTH = 12

interface Parameters {
  readonly logN: number
  readonly r: number
  readonly p: number
}

const derive = (password: string, salt: Buffer, { logN, r, p }: Parameters, length: number) =>
  Effect.async<Buffer>((resume) => {
    scrypt(password.normalize("NFC"), salt, length, { N: 2 ** logN, r, p, maxmem: MAX_MEM }, (error, key) =>
      resume(error === null ? Effect.succeed(key) : Effect.die(error))
    )
  })

export const hashPassword = (password: Redacted.Redacted<string>): Effect.Effect<string> =>
  Effect.suspend(() => {
    const salt = randomBytes(SALT_BYTES)
    return Effect.map(
      derive(Redacted.value(password), salt, { logN: LOG_N, r: R, p: P }, KEY_BYTES),
      (key) => `scrypt$${LOG_N}$${R}$${P}$${salt.toString("base64url")}$${key.toString("base64url")}`
    )
  })

const parse = (stored: string) => {
  const [kind, logN, r, p, salt, hash] = stored.split("$")
  const numbers = [logN, r, p].map(Number)
  if (kind !== "scrypt" || salt === undefined || hash === undefined || numbers.some((n) => !Number.isInteger(n))) {
    return undefined
  }
  const [n = 0, rr = 0, pp = 0] = numbers
  if (n < 10 || n > 20 || rr < 1 || rr > 32 || pp < 1 || pp > 16) return undefined
  return {
    parameters: { logN: n, r: rr, p: pp },
    salt: Buffer.from(salt, "base64url"),
    hash: Buffer.from(hash, "base64url")
  }
}

/** A fixed hash verified for unknown usernames, so "no such user" costs as long as "wrong password". */
export const DUMMY_PASSWORD_HASH = `scrypt$${LOG_N}$${R}$${P}$${Buffer.alloc(SALT_BYTES).toString("base64url")}$${Buffer.alloc(KEY_BYTES).toString("base64url")}`

/** True when `password` matches `stored`; the comparison is constant-time. A malformed hash never matches. */
export const verifyPassword = (password: Redacted.Redacted<string>, stored: string): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const parsed = parse(stored)
    if (parsed === undefined || parsed.hash.length === 0) return Effect.succeed(false)
    return Effect.map(derive(Redacted.value(password), parsed.salt, parsed.parameters, parsed.hash.length), (key) =>
      timingSafeEqual(key, parsed.hash)
    )
  })

/**
 * True when a stored hash that just verified was made with weaker parameters than today's (say p = 1,
 * before the cost was raised): the sign-in that proved the password replaces it with a current hash.
 * A hash at least as strong in every parameter is kept as it is.
 */
export const needsRehash = (stored: string): boolean => {
  const parsed = parse(stored)
  if (parsed === undefined) return false
  const { logN, r, p } = parsed.parameters
  return logN < LOG_N || r < R || p < P || parsed.hash.length < KEY_BYTES
}

/** A generated password: 24 base64url characters, 144 random bits. */
export const generatePassword = (): Redacted.Redacted<string> => Redacted.make(randomBytes(18).toString("base64url"))
