/**
 * Local accounts (docs/authorization-server.md, "Sign-in"): passwords hashed with scrypt and a per-user
 * salt, compared in constant time.
 */
import { randomBytes, scryptSync } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import {
  DUMMY_PASSWORD_HASH,
  generatePassword,
  hashPassword,
  needsRehash,
  verifyPassword
} from "../../src/identity/local/password.js"

const secret = Redacted.make

describe("password hashing", () => {
  it("upgrades only hashes weaker than today's parameters, never a stronger or malformed one", () => {
    const salt = Buffer.alloc(16).toString("base64url")
    const key = Buffer.alloc(32).toString("base64url")
    expect(needsRehash(`scrypt$15$8$1$${salt}$${key}`)).toBe(true)
    expect(needsRehash(`scrypt$14$8$3$${salt}$${key}`)).toBe(true)
    expect(needsRehash(`scrypt$15$8$3$${salt}$${Buffer.alloc(16).toString("base64url")}`)).toBe(true)
    expect(needsRehash(DUMMY_PASSWORD_HASH)).toBe(false)
    expect(needsRehash(`scrypt$16$8$4$${salt}$${key}`)).toBe(false)
    expect(needsRehash("not-a-hash")).toBe(false)
  })

  it.effect("verifies the right password and refuses a wrong one", () =>
    Effect.gen(function* () {
      const stored = yield* hashPassword(secret("correct horse battery staple"))
      expect(stored).toMatch(/^scrypt\$15\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/)
      expect(yield* verifyPassword(secret("correct horse battery staple"), stored)).toBe(true)
      expect(yield* verifyPassword(secret("correct horse battery stapl"), stored)).toBe(false)
      expect(yield* verifyPassword(secret(""), stored)).toBe(false)
    })
  )

  it.effect("still verifies hashes stored with the earlier parameters (N=2^15, r=8, p=1)", () =>
    Effect.gen(function* () {
      const salt = randomBytes(16)
      const key = scryptSync("an older passphrase", salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })
      const stored = `scrypt$15$8$1$${salt.toString("base64url")}$${key.toString("base64url")}`
      expect(yield* verifyPassword(secret("an older passphrase"), stored)).toBe(true)
      expect(yield* verifyPassword(secret("an older passphrasE"), stored)).toBe(false)
    })
  )

  it.effect("salts every hash, so equal passwords never have equal hashes", () =>
    Effect.gen(function* () {
      const first = yield* hashPassword(secret("same password here"))
      const second = yield* hashPassword(secret("same password here"))
      expect(first).not.toBe(second)
      expect(first.split("$")[4]).not.toBe(second.split("$")[4])
    })
  )

  it.effect("treats Unicode forms alike (NFC) and never matches a malformed or dummy hash", () =>
    Effect.gen(function* () {
      const stored = yield* hashPassword(secret("caf\u00e9-passphrase"))
      expect(yield* verifyPassword(secret("cafe\u0301-passphrase"), stored)).toBe(true)
      for (const bad of ["", "scrypt$15$8$1$", "bcrypt$x", "scrypt$99$8$1$AAAA$AAAA", "scrypt$a$b$c$d$e"]) {
        expect(yield* verifyPassword(secret("anything"), bad)).toBe(false)
      }
      expect(yield* verifyPassword(secret(""), DUMMY_PASSWORD_HASH)).toBe(false)
    })
  )

  it("generates 144-bit passwords that differ every time", () => {
    const a = Redacted.value(generatePassword())
    const b = Redacted.value(generatePassword())
    expect(a).toMatch(/^[A-Za-z0-9_-]{24}$/)
    expect(a).not.toBe(b)
  })
})
