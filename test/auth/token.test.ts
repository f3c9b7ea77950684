/**
 * docs/authorization-server.md, "Token endpoint" and "Lifetimes and limits": the token endpoint over real
 * HTTP — code exchange with PKCE, replay, rotation, reuse detection, 10-minute tokens, 8-hour sessions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, TestClock } from "effect"
import { UserRepo } from "../../src/store/users.js"
import { storeKinds } from "../support/databases.js"
import { authorizePath, Browser, exchange, obtainCode, pkcePair, refresh } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { admits, callerOf, listTools } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const signedInBrowser = (kind: (typeof storeKinds)[number]) =>
  Effect.gen(function* () {
    const gateway = yield* oauthGateway({ kind })
    const browser = new Browser(gateway.baseUrl)
    const totp = {}
    const code = (scope = "offline_access") =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) => promise(() => obtainCode(browser, { scope, totp, nowMs })))
    const tokens = (scope = "offline_access") =>
      Effect.flatMap(code(scope), (obtained) => promise(() => exchange(gateway.baseUrl, obtained)))
    return { gateway, browser, code, tokens }
  })

describe.each(storeKinds)("POST /sso/token (%s)", (kind) => {
  it.scoped("a replayed code is refused and the tokens issued from it are revoked", () =>
    Effect.gen(function* () {
      const { gateway, code } = yield* signedInBrowser(kind)
      const obtained = yield* code()
      const first = yield* promise(() => exchange(gateway.baseUrl, obtained))
      expect(first.response.status).toBe(200)
      const access = String(first.body["access_token"])
      expect(yield* admits(gateway, access)).toBe("admitted")

      const replay = yield* promise(() => exchange(gateway.baseUrl, obtained))
      expect(replay.response.status).toBe(400)
      expect(replay.body["error"]).toBe("invalid_grant")
      expect(yield* admits(gateway, access)).toBe("session: the session was revoked")
      const refreshed = yield* promise(() => refresh(gateway.baseUrl, String(first.body["refresh_token"])))
      expect(refreshed.body["error"]).toBe("invalid_grant")
    })
  )

  it.scoped("a code replayed hours later (past the access token's 10 minutes) still revokes its session", () =>
    Effect.gen(function* () {
      const { gateway, code } = yield* signedInBrowser(kind)
      const obtained = yield* code()
      const first = yield* promise(() => exchange(gateway.baseUrl, obtained))
      expect(first.response.status).toBe(200)
      yield* TestClock.adjust("3 hours")
      // Issuing another code sweeps what pending codes no longer need to keep.
      const later = yield* code()
      expect((yield* promise(() => exchange(gateway.baseUrl, later))).response.status).toBe(200)
      const replay = yield* promise(() => exchange(gateway.baseUrl, obtained))
      expect(replay.body["error"]).toBe("invalid_grant")
      const refreshed = yield* promise(() => refresh(gateway.baseUrl, String(first.body["refresh_token"])))
      expect(refreshed.body).toMatchObject({
        error: "invalid_grant",
        error_description: "The session was revoked; sign in again."
      })
    })
  )

  it.scoped("refresh rotates; a consumed token used again revokes the whole family", () =>
    Effect.gen(function* () {
      const { gateway, tokens } = yield* signedInBrowser(kind)
      const { body } = yield* tokens()
      const first = String(body["refresh_token"])
      const second = yield* promise(() => refresh(gateway.baseUrl, first))
      expect(second.response.status).toBe(200)
      expect(second.response.headers.get("cache-control")).toBe("no-store")
      expect(second.body).toMatchObject({ token_type: "Bearer", scope: "offline_access", expires_in: 600 })
      const secondToken = String(second.body["refresh_token"])
      expect(secondToken).not.toBe(first)
      expect(callerOf(String(second.body["access_token"])).sessionId).toBe(
        callerOf(String(body["access_token"])).sessionId
      )
      const third = yield* promise(() => refresh(gateway.baseUrl, secondToken))
      expect(third.response.status).toBe(200)

      const reuse = yield* promise(() => refresh(gateway.baseUrl, first))
      expect(reuse.response.status).toBe(400)
      expect(reuse.body["error"]).toBe("invalid_grant")
      const latest = yield* promise(() => refresh(gateway.baseUrl, String(third.body["refresh_token"])))
      expect(latest.body["error"]).toBe("invalid_grant")
      expect(yield* admits(gateway, String(third.body["access_token"]))).toBe("session: the session was revoked")
    })
  )

  it.scoped("of concurrent refreshes with one token at most one wins, and the race revokes the family", () =>
    Effect.gen(function* () {
      const { gateway, tokens } = yield* signedInBrowser(kind)
      const { body } = yield* tokens()
      const token = String(body["refresh_token"])
      const results = yield* promise(() =>
        Promise.all(Array.from({ length: 8 }, () => refresh(gateway.baseUrl, token)))
      )
      const winners = results.filter((result) => result.response.status === 200)
      expect(winners.length).toBeLessThanOrEqual(1)
      expect(results.filter((result) => result.body["error"] === "invalid_grant").length).toBeGreaterThanOrEqual(7)
      expect(yield* admits(gateway, String(body["access_token"]))).toBe("session: the session was revoked")
    })
  )

  it.scoped("a disabled user is cut off on the very next request and cannot refresh", () =>
    Effect.gen(function* () {
      const { gateway, tokens } = yield* signedInBrowser(kind)
      const { body } = yield* tokens()
      const access = String(body["access_token"])
      expect(yield* admits(gateway, access)).toBe("admitted")
      // Over /mcp: the second request is answered from the verified token, session and view caches.
      expect((yield* listTools(gateway.mcpUrl, access)).status).toBe(200)
      expect((yield* listTools(gateway.mcpUrl, access)).status).toBe(200)
      const users = yield* inGateway(gateway)(UserRepo)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* users.setStatus(callerOf(access).subject, "disabled", now)
      expect((yield* listTools(gateway.mcpUrl, access)).status).toBe(401)
      expect(yield* admits(gateway, access)).toBe("session: the user is not enabled")
      const refreshed = yield* promise(() => refresh(gateway.baseUrl, String(body["refresh_token"])))
      expect(refreshed.body["error"]).toBe("invalid_grant")
      yield* users.setStatus(callerOf(access).subject, "enabled", now)
      expect(yield* admits(gateway, access)).toBe("admitted")
      expect((yield* listTools(gateway.mcpUrl, access)).status).toBe(200)
    })
  )
})

describe("POST /sso/token: lifetimes (TestClock)", () => {
  it.scoped("access tokens end after 10 minutes; refresh works inside the 8-hour session only", () =>
    Effect.gen(function* () {
      const { gateway, tokens } = yield* signedInBrowser("sqlite")
      const { body } = yield* tokens()
      const access = String(body["access_token"])
      yield* TestClock.adjust("599 seconds")
      expect(yield* admits(gateway, access)).toBe("admitted")
      yield* TestClock.adjust("1 second")
      expect(yield* admits(gateway, access)).toBe("token: ERR_JWT_EXPIRED")

      let token = String(body["refresh_token"])
      // From 10 minutes after sign-in, refresh every 50 minutes up to 7h40m: each rotation works.
      for (let round = 0; round < 9; round++) {
        yield* TestClock.adjust(`${50 * 60} seconds`)
        const next = yield* promise(() => refresh(gateway.baseUrl, token))
        expect(next.response.status).toBe(200)
        token = String(next.body["refresh_token"])
      }
      // 7h55m after sign-in: the next token may only live until the session's end, 5 minutes later.
      yield* TestClock.adjust(`${15 * 60} seconds`)
      const last = yield* promise(() => refresh(gateway.baseUrl, token))
      expect(last.body["expires_in"]).toBe(300)
      yield* TestClock.adjust("299 seconds")
      expect(yield* admits(gateway, String(last.body["access_token"]))).toBe("admitted")
      yield* TestClock.adjust("1 second")
      expect(yield* admits(gateway, String(last.body["access_token"]))).not.toBe("admitted")
      const after = yield* promise(() => refresh(gateway.baseUrl, String(last.body["refresh_token"])))
      expect(after.body).toMatchObject({
        error: "invalid_grant",
        error_description: "The 8-hour session ended; sign in again."
      })
    })
  )

  it.scoped("codes are single-use and expire after 1 minute", () =>
    Effect.gen(function* () {
      const { gateway, code } = yield* signedInBrowser("sqlite")
      const fresh = yield* code()
      yield* TestClock.adjust("60 seconds")
      const late = yield* promise(() => exchange(gateway.baseUrl, fresh))
      expect(late.body).toMatchObject({
        error: "invalid_grant",
        error_description: "The authorization code is invalid or expired."
      })
      const inTime = yield* code()
      yield* TestClock.adjust("59 seconds")
      expect((yield* promise(() => exchange(gateway.baseUrl, inTime))).response.status).toBe(200)
    })
  )
})

describe("POST /sso/token: PKCE, binding and bad input", () => {
  it.scoped("PKCE: a wrong or missing verifier fails and spends the code; no downgrade yields a code", () =>
    Effect.gen(function* () {
      const { gateway, browser, code } = yield* signedInBrowser("sqlite")
      const wrong = yield* code()
      const other = pkcePair().verifier
      const failed = yield* promise(() => exchange(gateway.baseUrl, wrong, { code_verifier: other }))
      expect(failed.body).toMatchObject({ error: "invalid_grant" })
      expect((yield* promise(() => exchange(gateway.baseUrl, wrong))).body["error"]).toBe("invalid_grant")

      for (const verifier of ["", "short", "x".repeat(129), `${wrong.verifier} `]) {
        const obtained = yield* code()
        const response = yield* promise(() => exchange(gateway.baseUrl, obtained, { code_verifier: verifier }))
        expect([verifier, response.body["error"]]).toEqual([
          verifier,
          verifier === "" ? "invalid_request" : "invalid_grant"
        ])
      }
      // Downgrades never produce a code: without a challenge, with `plain`, or with the verifier as challenge.
      for (const params of [
        { code_challenge_method: "S256" },
        { code_challenge: wrong.verifier, code_challenge_method: "plain" },
        { code_challenge: wrong.verifier }
      ]) {
        const response = yield* promise(() =>
          browser.get(
            authorizePath({
              client_id: "cli",
              redirect_uri: "http://127.0.0.1:50000/callback",
              response_type: "code",
              ...params
            })
          )
        )
        const location = new URL(response.headers.get("location") ?? "")
        expect(location.searchParams.get("error")).toBe("invalid_request")
        expect(location.searchParams.get("code")).toBeNull()
      }
    })
  )

  it.scoped("the code is bound to its client, redirect URI and resource", () =>
    Effect.gen(function* () {
      const { gateway, code } = yield* signedInBrowser("sqlite")
      const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ redirect_uri: "http://127.0.0.1:50001/callback" }, "invalid_grant"],
        [{ client_id: "fixed" }, "invalid_grant"],
        [{ resource: "https://other.example/mcp" }, "invalid_target"]
      ]
      for (const [overrides, error] of cases) {
        const obtained = yield* code()
        const result = yield* promise(() => exchange(gateway.baseUrl, obtained, overrides))
        expect([overrides, result.body["error"]]).toEqual([overrides, error])
      }
    })
  )

  it.scoped("answers RFC 6749 errors for every malformed request", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const post = (body: string, headers: Record<string, string> = {}) =>
        promise(async () => {
          const response = await fetch(`${gateway.baseUrl}/sso/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
            body
          })
          return { status: response.status, body: (await response.json()) as Record<string, unknown>, response }
        })
      const cases: ReadonlyArray<readonly [string, Record<string, string>, number, string]> = [
        ["grant_type=authorization_code&client_id=cli", { "content-type": "application/json" }, 400, "invalid_request"],
        ["grant_type=refresh_token&client_id=cli&refresh_token=x&client_secret=s", {}, 401, "invalid_client"],
        [
          "grant_type=refresh_token&client_id=cli&refresh_token=x",
          { authorization: "Basic Y2xpOnM=" },
          401,
          "invalid_client"
        ],
        ["grant_type=refresh_token&refresh_token=x", {}, 400, "invalid_request"],
        ["grant_type=refresh_token&client_id=nobody&refresh_token=x", {}, 401, "invalid_client"],
        ["grant_type=refresh_token&client_id=cli&client_id=cli&refresh_token=x", {}, 400, "invalid_request"],
        ["client_id=cli", {}, 400, "invalid_request"],
        ["grant_type=password&client_id=cli&username=a&password=b", {}, 400, "unsupported_grant_type"],
        ["grant_type=client_credentials&client_id=cli", {}, 400, "unsupported_grant_type"],
        ["grant_type=authorization_code&client_id=cli&redirect_uri=x&code_verifier=y", {}, 400, "invalid_request"],
        ["grant_type=authorization_code&client_id=cli&code=x&code_verifier=y", {}, 400, "invalid_request"],
        [
          "grant_type=authorization_code&client_id=cli&code=a&code=b&redirect_uri=x&code_verifier=y",
          {},
          400,
          "invalid_request"
        ],
        [
          "grant_type=authorization_code&client_id=cli&code=unknown&redirect_uri=x&code_verifier=y",
          {},
          400,
          "invalid_grant"
        ],
        ["grant_type=refresh_token&client_id=cli", {}, 400, "invalid_request"],
        ["grant_type=refresh_token&client_id=cli&refresh_token=unknown", {}, 400, "invalid_grant"],
        [`grant_type=refresh_token&client_id=cli&refresh_token=${"x".repeat(2049)}`, {}, 400, "invalid_request"],
        [`grant_type=refresh_token&client_id=cli&refresh_token=${"x".repeat(17_000)}`, {}, 400, "invalid_request"]
      ]
      for (const [body, headers, status, error] of cases) {
        const result = yield* post(body, headers)
        expect([body.slice(0, 80), result.status, result.body["error"]]).toEqual([body.slice(0, 80), status, error])
        expect(result.body["error_description"]).toEqual(expect.any(String))
        expect(result.response.headers.get("cache-control")).toBe("no-store")
      }
      const get = yield* promise(() => fetch(`${gateway.baseUrl}/sso/token`))
      expect(get.status).toBe(405)
      expect(get.headers.get("allow")).toBe("POST")
    })
  )

  it.scoped("issues no refresh token without offline_access; a refresh may narrow the scope, never widen it", () =>
    Effect.gen(function* () {
      const { gateway, tokens } = yield* signedInBrowser("sqlite")
      const plain = yield* tokens("gateway:admin")
      expect(plain.body["scope"]).toBe("gateway:admin")
      expect(plain.body["refresh_token"]).toBeUndefined()

      const offline = yield* tokens("offline_access gateway:admin")
      const token = String(offline.body["refresh_token"])
      const widened = yield* promise(() =>
        refresh(gateway.baseUrl, token, { scope: "offline_access gateway:admin other" })
      )
      expect(widened.body["error"]).toBe("invalid_scope")
      const narrowed = yield* promise(() => refresh(gateway.baseUrl, token, { scope: "offline_access" }))
      expect(narrowed.body["scope"]).toBe("offline_access")
      expect(callerOf(String(narrowed.body["access_token"])).scopes).toEqual(new Set(["offline_access"]))
      const other = yield* promise(() =>
        refresh(gateway.baseUrl, String(narrowed.body["refresh_token"]), { client_id: "fixed" })
      )
      expect(other.body["error"]).toBe("invalid_grant")
    })
  )
})
