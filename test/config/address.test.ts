import { describe, expect, it } from "@effect/vitest"
import { isLoopbackHost, requireHttpsUnlessLoopback } from "../../src/config/address.js"
import { parseListen } from "../../src/config/rules.js"

describe("parseListen (server.listen is an address)", () => {
  it("reads host:port and bracketed IPv6", () => {
    expect(parseListen("127.0.0.1:8080")).toEqual({ host: "127.0.0.1", port: 8080 })
    expect(parseListen("[::1]:8080")).toEqual({ host: "::1", port: 8080 })
    expect(parseListen("0.0.0.0:1")).toEqual({ host: "0.0.0.0", port: 1 })
    expect(parseListen("gateway.internal:65535")).toEqual({ host: "gateway.internal", port: 65535 })
  })

  it("rejects missing hosts, bad ports and unbracketed IPv6", () => {
    for (const text of [
      ":8080",
      "127.0.0.1",
      "127.0.0.1:0",
      "127.0.0.1:65536",
      "127.0.0.1:+80",
      "::1:8080",
      "[::1]",
      "[nothost]:80",
      "a b:80",
      "127.0.0.1:80:80"
    ]) {
      expect(parseListen(text), text).toBeUndefined()
    }
  })
})

describe("isLoopbackHost", () => {
  it("accepts 127.0.0.0/8, ::1 in any spelling and localhost", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "localhost", "LOCALHOST"]) {
      expect(isLoopbackHost(host), host).toBe(true)
    }
  })

  it("rejects everything else", () => {
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "localhost.example.com", "127.0.0.1.nip.io"]) {
      expect(isLoopbackHost(host), host).toBe(false)
    }
  })
})

describe("requireHttpsUnlessLoopback (docs/configuration.md: plain http only on loopback)", () => {
  it("allows http on loopback only", () => {
    expect(requireHttpsUnlessLoopback("http://127.0.0.1:8080/mcp")).toBeUndefined()
    expect(requireHttpsUnlessLoopback("http://[::1]:8080/mcp")).toBeUndefined()
    expect(requireHttpsUnlessLoopback("https://gw.example.com/mcp")).toBeUndefined()
    expect(requireHttpsUnlessLoopback("http://gw.example.com/mcp")).toMatch(/must use https/)
    expect(requireHttpsUnlessLoopback("ftp://127.0.0.1/")).toMatch(/must use https/)
  })
})
