/** docs/authorization-server.md, "Paths" — authorization server metadata at both well-known paths (RFC 8414). */

import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ssoRouter } from "../../src/auth/routes.js"
import { scopesSupported } from "../../src/auth/scopes.js"
import { Config } from "../../src/config/service.js"
import { UpstreamSignInLive } from "../../src/identity/upstream/service.js"
import { baseLayer } from "../../src/runtime/base.js"
import { configOf, noSecrets } from "../fixtures/config/base.js"
import { randomConfigKey, withStorage } from "../support/databases.js"
import { oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

describe("authorization server metadata", () => {
  it.scoped("serves the same RFC 8414 document at both well-known paths", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ patch: { admin: { required_scopes: ["gateway:admin", "gateway:audit"] } } })
      const expected = {
        issuer: gateway.issuer,
        authorization_endpoint: `${gateway.issuer}/authorize`,
        token_endpoint: `${gateway.issuer}/token`,
        jwks_uri: `${gateway.baseUrl}/sso/jwks.json`,
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        authorization_response_iss_parameter_supported: true,
        scopes_supported: ["offline_access", "gateway:admin", "gateway:audit", "gateway:approve", "gateway:security"],
        prompt_values_supported: ["none", "login", "consent"]
      }
      for (const path of ["/.well-known/oauth-authorization-server/sso", "/.well-known/openid-configuration/sso"]) {
        const response = yield* promise(() => fetch(`${gateway.baseUrl}${path}`))
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toContain("application/json")
        expect(yield* promise(() => response.json())).toEqual(expected)
        const post = yield* promise(() => fetch(`${gateway.baseUrl}${path}`, { method: "POST" }))
        expect(post.status).toBe(405)
      }
      // No dynamic registration, no other discovery locations.
      for (const path of [
        "/sso/register",
        "/sso/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server"
      ]) {
        expect(
          (yield* promise(() =>
            fetch(`${gateway.baseUrl}${path}`, { method: path.endsWith("register") ? "POST" : "GET" })
          )).status
        ).toBe(404)
      }
    })
  )

  // In-process: an external-mode generation would first load the external key set.
  it.scoped("in external mode the built-in server does not exist: its paths are 404", () =>
    Effect.gen(function* () {
      const base = yield* Layer.build(baseLayer(configOf({ storage: yield* withStorage("sqlite") }), randomConfigKey()))
      const loaded = {
        file: "gateway.yaml",
        config: configOf({
          auth: {
            mode: "external",
            issuer: "https://idp.example.com",
            external: { jwks_url: "https://idp.example.com/jwks" }
          }
        }),
        secrets: noSecrets
      }
      const app = yield* HttpRouter.toHttpApp(ssoRouter)
      for (const [method, path] of [
        ["GET", "/.well-known/oauth-authorization-server/sso"],
        ["GET", "/sso"],
        ["GET", "/sso/authorize?client_id=cli"],
        ["POST", "/sso/token"],
        ["GET", "/sso/callback?state=x&code=y"]
      ] as const) {
        const request = HttpServerRequest.fromWeb(new Request(`https://gw.example.com${path}`, { method }))
        const failure = yield* Effect.flip(
          app.pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, request),
            Effect.provide(UpstreamSignInLive),
            Effect.provideService(Config, loaded),
            Effect.provide(base)
          )
        )
        expect([path, failure._tag]).toEqual([path, "RouteNotFound"])
      }
    })
  )
})

describe("scopes_supported", () => {
  it("is offline_access, every role's administrative scopes and every backend's required scopes, once each", () => {
    const config = configOf({
      admin: {
        required_scopes: ["gateway:admin"],
        approvals: { policy_changes: { required_scopes: ["gateway:security"] } }
      },
      backends: [
        { id: "a", url: "https://a.example.com/mcp", required_scopes: ["tools:read", "gateway:admin"] },
        { id: "b", url: "https://b.example.com/mcp", required_scopes: ["tools:write"] }
      ]
    })
    expect(scopesSupported(config)).toEqual([
      "offline_access",
      "gateway:admin",
      "gateway:approve",
      "gateway:security",
      "tools:read",
      "tools:write"
    ])
  })
})
