/** RFC 6238 TOTP and RFC 4648 base32 (the `otpauth` library), checked against the RFCs' own test vectors. */
import { describe, expect, it } from "vitest"
import { base32Decode, base32Encode, matchTotp, otpauthUri, stepAt, totpAt } from "../../src/identity/local/totp.js"

// RFC 6238 Appendix B, SHA-1 seed; the RFC lists 8 digits, the last 6 are the 6-digit codes.
const seed = new TextEncoder().encode("12345678901234567890")
const vectors: ReadonlyArray<readonly [number, string]> = [
  [59, "94287082"],
  [1111111109, "07081804"],
  [1111111111, "14050471"],
  [1234567890, "89005924"],
  [2000000000, "69279037"],
  [20000000000, "65353130"]
]

/** The code of TOTP step `step` (the RFC 4226 HOTP value of that counter). */
const hotp = (secret: Uint8Array, step: number) => totpAt(secret, step * 30_000)

describe("TOTP (RFC 6238)", () => {
  it.each(vectors)("at %i s the code is the last 6 digits of %s", (seconds, eight) => {
    expect(totpAt(seed, seconds * 1000)).toBe(eight.slice(2))
  })

  it("RFC 4226 HOTP values for counters 0-2", () => {
    expect([0, 1, 2].map((counter) => hotp(seed, counter))).toEqual(["755224", "287082", "359152"])
  })

  it("accepts the previous, current and next step, nothing further", () => {
    const now = 1_700_000_000_000
    const step = stepAt(now)
    for (const offset of [-1, 0, 1]) {
      expect(matchTotp(seed, hotp(seed, step + offset), now, undefined)).toBe(step + offset)
    }
    for (const offset of [-2, 2]) expect(matchTotp(seed, hotp(seed, step + offset), now, undefined)).toBeUndefined()
  })

  it("refuses a code at or before the last accepted step (no replay)", () => {
    const now = 1_700_000_000_000
    const step = stepAt(now)
    const code = hotp(seed, step)
    expect(matchTotp(seed, code, now, step)).toBeUndefined()
    expect(matchTotp(seed, code, now, step - 1)).toBe(step)
    expect(matchTotp(seed, hotp(seed, step - 1), now, step - 1)).toBeUndefined()
  })

  it("refuses anything but six digits", () => {
    for (const bad of ["", "12345", "1234567", "12345a", " 123456", "１２３４５６"]) {
      expect(matchTotp(seed, bad, 59_000, undefined)).toBeUndefined()
    }
  })

  it("builds an otpauth URI authenticator apps import", () => {
    const uri = new URL(otpauthUri(seed, "gateway example.com", "admin"))
    expect(uri.protocol).toBe("otpauth:")
    expect(uri.searchParams.get("secret")).toBe(base32Encode(seed))
    expect(uri.searchParams.get("period")).toBe("30")
    expect(uri.searchParams.get("digits")).toBe("6")
  })
})

describe("base32 (RFC 4648 §10)", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["", ""],
    ["f", "MY"],
    ["fo", "MZXQ"],
    ["foo", "MZXW6"],
    ["foob", "MZXW6YQ"],
    ["fooba", "MZXW6YTB"],
    ["foobar", "MZXW6YTBOI"]
  ]
  it.each(cases)("%j encodes to %j and back", (text, encoded) => {
    expect(base32Encode(new TextEncoder().encode(text))).toBe(encoded)
    expect(new TextDecoder().decode(base32Decode(`${encoded.toLowerCase()}==`))).toBe(text)
  })
  it("refuses characters outside the alphabet", () => {
    expect(base32Decode("MZ1W")).toBeUndefined()
  })
})
