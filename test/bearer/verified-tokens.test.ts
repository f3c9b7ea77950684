// docs/mcp.md, "Tokens" — a cached verification must never outlive the token's expiry.
import { describe, expect, it } from "vitest"
import type { Caller } from "../../src/bearer/caller.js"
import { VerifiedTokens } from "../../src/bearer/verified-tokens.js"

const caller = (expiresAt: number): Caller => ({
  issuer: "http://127.0.0.1/sso",
  subject: "user-1",
  scopes: new Set(),
  clientId: "cli",
  sessionId: "s1",
  tokenId: "j1",
  expiresAt
})

describe("VerifiedTokens", () => {
  it("returns an entry only before its exp, and forgets it after", () => {
    const cache = new VerifiedTokens(10)
    cache.set("token-a", caller(1_000))
    expect(cache.get("token-a", 999)?.subject).toBe("user-1")
    expect(cache.get("token-a", 1_000)).toBeUndefined()
    expect(cache.get("token-a", 10)).toBeUndefined()
  })

  it("matches the exact token text only", () => {
    const cache = new VerifiedTokens(10)
    cache.set("token-a", caller(1_000))
    expect(cache.get("token-a ", 1)).toBeUndefined()
    expect(cache.get("TOKEN-A", 1)).toBeUndefined()
  })

  it("evicts the oldest entry at capacity", () => {
    const cache = new VerifiedTokens(2)
    cache.set("a", caller(1_000))
    cache.set("b", caller(1_000))
    cache.set("c", caller(1_000))
    expect(cache.get("a", 1)).toBeUndefined()
    expect(cache.get("b", 1)).toBeDefined()
    expect(cache.get("c", 1)).toBeDefined()
  })
})
