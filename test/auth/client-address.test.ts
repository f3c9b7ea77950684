/**
 * Which address a sign-in request comes from (docs/authorization-server.md, "Client address"): the TCP
 * peer, or — only when the peer is one of `server.trusted_proxies` — the right-most address in
 * `X-Forwarded-For` that is not itself a trusted proxy.
 */
import { describe, expect, it } from "@effect/vitest"
import { addressBucket, resolveClientAddress, trustedProxyList } from "../../src/auth/client-address.js"

describe("resolveClientAddress", () => {
  const proxies = trustedProxyList(["10.0.0.0/8", "fd00::/8", "192.0.2.10"])

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", () => {
    expect(resolveClientAddress("198.51.100.7", "203.0.113.1", proxies)).toBe("198.51.100.7")
    expect(resolveClientAddress("198.51.100.7", "203.0.113.1", trustedProxyList([]))).toBe("198.51.100.7")
    expect(resolveClientAddress("::ffff:198.51.100.7", undefined, proxies)).toBe("198.51.100.7")
    expect(resolveClientAddress(undefined, "203.0.113.1", proxies)).toBe("unknown")
  })

  it("takes the right-most untrusted hop behind trusted proxies; what the client prepended is not believed", () => {
    expect(resolveClientAddress("10.1.2.3", "203.0.113.1", proxies)).toBe("203.0.113.1")
    expect(resolveClientAddress("10.1.2.3", "6.6.6.6, 203.0.113.1, 10.9.9.9", proxies)).toBe("203.0.113.1")
    expect(resolveClientAddress("::ffff:192.0.2.10", "203.0.113.1:4711", proxies)).toBe("203.0.113.1")
    expect(resolveClientAddress("fd00::1", "[2001:DB8::1]:443", proxies)).toBe("2001:db8::1")
    // Everything trusted: the left-most proxy is the best that is known.
    expect(resolveClientAddress("10.1.2.3", "10.4.4.4", proxies)).toBe("10.4.4.4")
  })

  it("stops at an unreadable hop rather than believe anything left of it", () => {
    expect(resolveClientAddress("10.1.2.3", "203.0.113.1, unknown", proxies)).toBe("10.1.2.3")
    expect(resolveClientAddress("10.1.2.3", "203.0.113.1, 10.2.2.2, garbage", proxies)).toBe("10.1.2.3")
    expect(resolveClientAddress("10.1.2.3", "garbage, 10.2.2.2", proxies)).toBe("10.2.2.2")
  })
})

describe("addressBucket", () => {
  it("is the address for IPv4 and the /64 for IPv6", () => {
    expect(addressBucket("198.51.100.7")).toBe("198.51.100.7")
    expect(addressBucket("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64")
    expect(addressBucket("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64")
    expect(addressBucket("::1")).toBe("0:0:0:0::/64")
    expect(addressBucket("unknown")).toBe("unknown")
  })
})
