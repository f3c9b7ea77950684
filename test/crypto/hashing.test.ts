import { describe, expect, it } from "@effect/vitest"
import { constantTimeEqual, sha256Hex } from "../../src/crypto/hashing.js"

describe("hashing", () => {
  it("sha256Hex matches the FIPS 180-2 test vector", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    expect(sha256Hex(new TextEncoder().encode("abc"))).toBe(sha256Hex("abc"))
  })

  it("constantTimeEqual compares strings and bytes of any length", () => {
    expect(constantTimeEqual("token", "token")).toBe(true)
    expect(constantTimeEqual("token", "tokeN")).toBe(false)
    expect(constantTimeEqual("token", "token-longer")).toBe(false)
    expect(constantTimeEqual("", "")).toBe(true)
    expect(constantTimeEqual(new TextEncoder().encode("token"), "token")).toBe(true)
  })
})
