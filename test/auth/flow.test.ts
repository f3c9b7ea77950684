/**
 * docs/authorization-server.md (access JWT 10 minutes, session 8 hours): the whole browser flow over real
 * HTTP, on SQLite and PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SessionGuard } from "../../src/bearer/caller.js"
import { Signer } from "../../src/crypto/signer.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { storeKinds } from "../support/databases.js"
import { Browser, beginCodeFlow, callbackParams, signIn, tokenRequest } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { admits, mintSessionToken } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

describe.each(storeKinds)("the authorization code flow (%s)", (kind) => {
  it.scoped("signs the administrator in with TOTP and issues a 10-minute token and a refresh token", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const browser = new Browser(gateway.baseUrl)
      const redirectUri = "http://127.0.0.1:43210/callback"
      const { response: start, verifier } = yield* promise(() =>
        beginCodeFlow(browser, redirectUri, {
          scope: "offline_access gateway:admin unknown:scope",
          state: "state-123",
          resource: gateway.mcpUrl
        })
      )
      expect(start.status).toBe(303)
      expect(start.headers.get("location")).toMatch(/^\/sso\?login=[A-Za-z0-9_-]{43}$/)
      const page = yield* promise(() => browser.follow(start))
      expect(page.status).toBe(200)
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")

      const done = yield* promise(() => signIn(browser, page, { totp: {}, nowMs: 0 }))
      expect(done.status).toBe(303)
      const callback = callbackParams(done)
      expect(callback.getAll("state")).toEqual(["state-123"])
      expect(callback.get("iss")).toBe(gateway.issuer)
      expect(done.headers.get("location")).toMatch(/^http:\/\/127\.0\.0\.1:43210\/callback\?code=/)

      const response = yield* promise(() =>
        tokenRequest(gateway.baseUrl, {
          grant_type: "authorization_code",
          client_id: "cli",
          code: callback.get("code") ?? "",
          redirect_uri: redirectUri,
          code_verifier: verifier
        })
      )
      expect(response.status).toBe(200)
      expect(response.headers.get("cache-control")).toBe("no-store")
      const body = (yield* promise(() => response.json())) as Record<string, unknown>
      expect(body).toMatchObject({ token_type: "Bearer", expires_in: 600, scope: "offline_access gateway:admin" })
      expect(body["refresh_token"]).toMatch(/^[A-Za-z0-9_-]{43}$/)

      const claims = yield* inGateway(gateway)(
        Effect.flatMap(Signer, (signer) =>
          signer.verify(String(body["access_token"]), { issuer: gateway.issuer, audience: gateway.mcpUrl })
        )
      )
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      expect(claims).toMatchObject({
        iss: gateway.issuer,
        aud: gateway.mcpUrl,
        client_id: "cli",
        scope: "offline_access gateway:admin",
        exp: now + 600
      })
      expect(claims.sub).toMatch(/^[0-9a-f-]{36}$/)
      expect(claims["sid"]).toEqual(expect.any(String))
      yield* inGateway(gateway)(
        Effect.flatMap(SessionGuard, (guard) =>
          guard.check({
            issuer: gateway.issuer,
            subject: claims.sub ?? "",
            scopes: new Set(),
            clientId: "cli",
            sessionId: String(claims["sid"]),
            tokenId: claims.jti,
            expiresAt: claims.exp ?? 0
          })
        )
      )
    })
  )

  it.scoped("a token for a stored session passes the /mcp checks until the session is revoked", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const minted = yield* inGateway(gateway)(
        mintSessionToken({ issuer: gateway.issuer, audience: gateway.mcpUrl, scopes: ["a"] })
      )
      expect(yield* admits(gateway, minted.token)).toBe("admitted")
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* inGateway(gateway)(
        Effect.flatMap(SessionRepo, (sessions) => sessions.revoke(minted.sessionId, "grant_revoked", now))
      )
      expect(yield* admits(gateway, minted.token)).toBe("session: the session was revoked")
    })
  )
})
