/**
 * Redirect URIs (docs/authorization-server.md, "Authorization endpoint") — loopback registered without a
 * port accepts any port; a registered port must match; everything else exactly; no wildcards, fragments or
 * dynamic registration.
 */
import { describe, expect, it } from "vitest"
import { redirectUriMatches, registeredRedirectUriProblem } from "../../src/auth/redirect-uri.js"

const loopback = ["http://127.0.0.1/callback"]

describe("redirect URI matching", () => {
  it.each([
    ["http://127.0.0.1:1/callback"],
    ["http://127.0.0.1:49152/callback"],
    ["http://127.0.0.1:65535/callback"],
    ["http://127.0.0.1/callback"]
  ])("loopback registered without a port accepts %s", (requested) => {
    expect(redirectUriMatches(loopback, requested)).toBe(true)
  })

  it.each([
    ["http://127.0.0.1:5000/callback/"],
    ["http://127.0.0.1:5000/Callback"],
    ["http://127.0.0.1:5000/callback?x=1"],
    ["http://127.0.0.1:5000/callback#frag"],
    ["https://127.0.0.1:5000/callback"],
    ["http://localhost:5000/callback"],
    ["http://127.0.0.2:5000/callback"],
    ["http://127.0.0.1:5000/other/../callback"],
    ["http://127.0.0.1:5000/%63allback"],
    ["http://user@127.0.0.1:5000/callback"],
    ["http://127.0.0.1:5000\\@evil.example/callback"],
    ["http://127.0.0.1:05000/callback"],
    ["http://127.0.0.1:80/callback"],
    ["http://127.0.0.1:0/callback"],
    ["http://127.0.0.1:00/callback"],
    ["http://127.0.0.1.evil.example:5000/callback"],
    ["http://evil.example/callback"],
    ["HTTP://127.0.0.1:5000/callback"]
  ])("loopback without a port still refuses %s", (requested) => {
    expect(redirectUriMatches(loopback, requested)).toBe(false)
  })

  it("IPv6 and localhost loopback registrations accept any port on the same host only", () => {
    expect(redirectUriMatches(["http://[::1]/cb"], "http://[::1]:8123/cb")).toBe(true)
    expect(redirectUriMatches(["http://localhost/cb"], "http://localhost:8123/cb")).toBe(true)
    expect(redirectUriMatches(["http://localhost/cb"], "http://127.0.0.1:8123/cb")).toBe(false)
  })

  it("a registered port must match exactly", () => {
    const fixed = ["http://127.0.0.1:7777/cb"]
    expect(redirectUriMatches(fixed, "http://127.0.0.1:7777/cb")).toBe(true)
    expect(redirectUriMatches(fixed, "http://127.0.0.1:7778/cb")).toBe(false)
    expect(redirectUriMatches(fixed, "http://127.0.0.1/cb")).toBe(false)
    expect(redirectUriMatches(["http://[::1]:7777/cb"], "http://[::1]:7778/cb")).toBe(false)
  })

  it("everything else matches character for character", () => {
    const web = ["https://app.example.com/oauth/callback?tenant=1", "com.example.app:/oauth"]
    expect(redirectUriMatches(web, "https://app.example.com/oauth/callback?tenant=1")).toBe(true)
    expect(redirectUriMatches(web, "com.example.app:/oauth")).toBe(true)
    for (const requested of [
      "https://app.example.com:443/oauth/callback?tenant=1",
      "https://app.example.com/oauth/callback?tenant=2",
      "https://app.example.com/oauth/callback?tenant=1&x=1",
      "https://APP.example.com/oauth/callback?tenant=1",
      "https://app.example.com/oauth/callback",
      "https://app.example.com:8443/oauth/callback?tenant=1",
      "com.example.app:/oauth/x",
      "com.example.app:/oauth#x"
    ]) {
      expect(redirectUriMatches(web, requested)).toBe(false)
    }
  })
})

describe("registered redirect URIs (configuration)", () => {
  it.each([
    ["http://127.0.0.1/cb"],
    ["http://localhost:8080/cb"],
    ["https://app.example.com/cb"],
    ["com.example.app:/oauth"]
  ])("accepts %s", (uri) => {
    expect(registeredRedirectUriProblem(uri)).toBeUndefined()
  })

  it.each([
    ["https://app.example.com/cb#x", "fragment"],
    ["https://*.example.com/cb", "wildcards"],
    ["https://app.example.com/*", "wildcards"],
    ["http://app.example.com/cb", "https"],
    ["https://user:pw@app.example.com/cb", "credentials"],
    ["javascript:alert(1)", "javascript"],
    ["not a url", "absolute URL"]
  ])("refuses %s (%s)", (uri, reason) => {
    expect(registeredRedirectUriProblem(uri)).toContain(reason)
  })
})
