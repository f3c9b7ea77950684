/**
 * docs/authorization-server.md, "Authorization endpoint" (login transaction 5 minutes): the
 * authorization endpoint over real HTTP, bad input of every kind, open-redirect attempts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { authorizePath, Browser, pkcePair } from "../support/oauth-client.js"
import { type OAuthGateway, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const { challenge } = pkcePair()
const redirectUri = "http://127.0.0.1:41000/callback"

const valid = (gateway: OAuthGateway): Array<[string, string]> => [
  ["client_id", "cli"],
  ["redirect_uri", redirectUri],
  ["response_type", "code"],
  ["code_challenge", challenge],
  ["code_challenge_method", "S256"],
  ["state", "st"],
  ["scope", "offline_access"],
  ["resource", gateway.mcpUrl]
]

/** The valid request with `name` removed, replaced or repeated. */
const variant = (gateway: OAuthGateway, name: string, values: ReadonlyArray<string> | undefined) => {
  const params = new URLSearchParams()
  for (const [key, value] of valid(gateway)) if (key !== name) params.append(key, value)
  for (const value of values ?? []) params.append(name, value)
  return params
}

const oversized = "x".repeat(2049)

describe("GET /sso/authorize", () => {
  it.scoped("shows a page, never a redirect, while the client or redirect URI is not established", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string> | undefined, string]> = [
        ["client_id", undefined, "client_id parameter is required"],
        ["client_id", ["cli", "cli"], "must not be repeated"],
        ["client_id", [oversized], "longer than 2048"],
        ["client_id", ["nobody"], "not registered"],
        ["client_id", [""], "client_id parameter is required"],
        ["redirect_uri", undefined, "redirect_uri parameter is required"],
        ["redirect_uri", [redirectUri, redirectUri], "must not be repeated"],
        ["redirect_uri", [`http://127.0.0.1:41000/${"a".repeat(2048)}`], "longer than 2048"],
        // Open-redirect attempts: none of these may ever appear in a Location header.
        ["redirect_uri", ["https://evil.example/callback"], "not one registered"],
        ["redirect_uri", ["http://127.0.0.1.evil.example:41000/callback"], "not one registered"],
        ["redirect_uri", ["http://127.0.0.1:41000@evil.example/callback"], "not one registered"],
        ["redirect_uri", ["http://127.0.0.1:41000\\@evil.example/callback"], "not one registered"],
        ["redirect_uri", ["http://127.0.0.1:41000/callback/../../evil"], "not one registered"],
        ["redirect_uri", ["http://127.0.0.1:41000/callback#@evil.example"], "not one registered"],
        ["redirect_uri", ["//evil.example/callback"], "not one registered"],
        ["redirect_uri", ["javascript:alert(1)//127.0.0.1/callback"], "not one registered"],
        ["redirect_uri", ["http://127.0.0.1:7777/cb"], "not one registered"]
      ]
      for (const [name, values, text] of cases) {
        const response = yield* promise(() => browser.get(authorizePath(variant(gateway, name, values))))
        const body = yield* promise(() => response.text())
        expect({ name, values, status: response.status, location: response.headers.get("location") }).toEqual({
          name,
          values,
          status: 400,
          location: null
        })
        expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8")
        expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
        expect(body).toContain(text)
        expect(body).not.toContain("evil.example")
      }
    })
  )

  it.scoped("reports later errors at the redirect URI with state once and iss", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string> | undefined, string]> = [
        ["response_type", undefined, "invalid_request"],
        ["response_type", ["token"], "unsupported_response_type"],
        ["response_type", ["code id_token"], "unsupported_response_type"],
        ["response_type", ["code", "code"], "invalid_request"],
        ["code_challenge", undefined, "invalid_request"],
        ["code_challenge", [challenge, challenge], "invalid_request"],
        ["code_challenge", ["short"], "invalid_request"],
        ["code_challenge", [`${challenge}!`], "invalid_request"],
        ["code_challenge_method", undefined, "invalid_request"],
        ["code_challenge_method", ["plain"], "invalid_request"],
        ["code_challenge_method", ["s256"], "invalid_request"],
        ["resource", ["https://other.example/mcp"], "invalid_target"],
        ["resource", [gateway.mcpUrl, gateway.mcpUrl], "invalid_target"],
        ["resource", [`${gateway.mcpUrl}/`], "invalid_target"],
        ["resource", [oversized], "invalid_request"],
        ["scope", ['a"b'], "invalid_scope"],
        ["scope", ["offline_access", "offline_access"], "invalid_request"],
        ["scope", [oversized], "invalid_request"],
        ["prompt", ["select_account"], "invalid_request"],
        ["prompt", ["none login"], "invalid_request"],
        ["response_mode", ["fragment"], "invalid_request"],
        ["request", ["eyJhbGciOiJub25lIn0.e30."], "request_not_supported"],
        ["request_uri", ["urn:example:req"], "request_uri_not_supported"]
      ]
      for (const [name, values, error] of cases) {
        const response = yield* promise(() => browser.get(authorizePath(variant(gateway, name, values))))
        expect({ name, values, status: response.status }).toEqual({ name, values, status: 303 })
        const location = new URL(response.headers.get("location") ?? "")
        expect(`${location.origin}${location.pathname}`).toBe(redirectUri)
        expect({ name, values, error: location.searchParams.get("error") }).toEqual({ name, values, error })
        expect(location.searchParams.getAll("state")).toEqual(["st"])
        expect(location.searchParams.get("iss")).toBe(gateway.issuer)
        expect(location.searchParams.get("code")).toBeNull()
      }
      // A bad state itself cannot be echoed.
      for (const values of [["a", "b"], [oversized]]) {
        const response = yield* promise(() => browser.get(authorizePath(variant(gateway, "state", values))))
        const location = new URL(response.headers.get("location") ?? "")
        expect(location.searchParams.get("error")).toBe("invalid_request")
        expect(location.searchParams.getAll("state")).toEqual([])
      }
    })
  )

  it.scoped("refuses a request line over 8 KiB with a page", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const params = variant(gateway, "extra", ["y".repeat(9000)])
      const response = yield* promise(() => new Browser(gateway.baseUrl).get(authorizePath(params)))
      expect(response.status).toBe(400)
      expect(response.headers.get("location")).toBeNull()
    })
  )

  it.scoped("resource: defaults to a client's only resource, is required when it has several", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const single = yield* promise(() => browser.get(authorizePath(variant(gateway, "resource", undefined))))
      expect(single.headers.get("location")).toMatch(/^\/sso\?login=/)
      const web = new URLSearchParams(variant(gateway, "resource", undefined))
      web.set("client_id", "web")
      web.set("redirect_uri", "https://app.example.com/oauth/callback?tenant=1")
      const several = yield* promise(() => browser.get(authorizePath(web)))
      const location = new URL(several.headers.get("location") ?? "")
      expect(location.searchParams.get("error")).toBe("invalid_target")
      // Exact registered query kept; error parameters appended.
      expect(location.searchParams.get("tenant")).toBe("1")
      web.set("resource", gateway.adminUrl)
      const chosen = yield* promise(() => browser.get(authorizePath(web)))
      expect(chosen.headers.get("location")).toMatch(/^\/sso\?login=/)
    })
  )

  it.scoped("prompt=none without a signed-in browser answers login_required", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const response = yield* promise(() =>
        new Browser(gateway.baseUrl).get(authorizePath(variant(gateway, "prompt", ["none"])))
      )
      const location = new URL(response.headers.get("location") ?? "")
      expect(location.searchParams.get("error")).toBe("login_required")
      expect(location.searchParams.get("state")).toBe("st")
    })
  )

  it.scoped("a login transaction lives 5 minutes and only in the browser that started it", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const start = yield* promise(() => browser.get(authorizePath(variant(gateway, "none", undefined))))
      expect(start.headers.get("set-cookie")).toMatch(/^gw_browser=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/)
      const page = start.headers.get("location") ?? ""

      const stranger = yield* promise(() => new Browser(gateway.baseUrl).get(page))
      expect(stranger.status).toBe(400)
      expect(yield* promise(() => stranger.text())).toContain("another browser")

      yield* TestClock.adjust("299 seconds")
      expect((yield* promise(() => browser.get(page))).status).toBe(200)
      yield* TestClock.adjust("1 second")
      const expired = yield* promise(() => browser.get(page))
      expect(expired.status).toBe(400)
      expect(yield* promise(() => expired.text())).toContain("older than 5 minutes")

      for (const bad of ["/sso?login=unknown", "/sso?login=a&login=b", `/sso?login=${"x".repeat(100)}`]) {
        expect((yield* promise(() => browser.get(bad))).status).toBe(400)
      }
    })
  )
})
