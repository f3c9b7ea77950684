import { createHash, timingSafeEqual } from "node:crypto"

/** Lowercase hex SHA-256, e.g. how refresh credentials are stored (docs/secrets.md: only as hashes). */
export const sha256Hex = (value: string | Uint8Array): string => createHash("sha256").update(value).digest("hex")

/**
 * Compares two secrets in constant time. Both sides are hashed first so `timingSafeEqual` gets equal
 * lengths and the comparison time reveals neither the length nor a matching prefix.
 */
export const constantTimeEqual = (a: string | Uint8Array, b: string | Uint8Array): boolean =>
  timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest())
