/**
 * Security events (issue: hardening, item 4; docs/operations.md, "Security events"): each refusal,
 * lockout, replay, revocation and reset writes one structured line with `event`, `reason`, the request
 * id and the client address where there is one — read back exactly as the production logger writes
 * them — and never a password, code, token or secret. Floods are bounded: refused Origins per address,
 * rejected tokens summarised per address and interval.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted, TestClock } from "effect"
import { MAX_ACCOUNT_ADDRESS_FAILURES, WINDOW_MS } from "../../src/auth/throttle.js"
import { initAdmin } from "../../src/identity/local/admin.js"
import { totpAt } from "../../src/identity/local/totp.js"
import { UserRepo } from "../../src/store/users.js"
import { LogCapture } from "../support/logs.js"
import {
  Browser,
  exchange,
  formFields,
  obtainCode,
  refresh,
  signIn,
  startAuthorization
} from "../support/oauth-client.js"
import { ADMIN_PASSWORD, inGateway, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const setup = Effect.gen(function* () {
  const logs = new LogCapture()
  const gateway = yield* oauthGateway({ logs })
  const adminId = Option.getOrThrow(
    yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))
  ).id
  return { logs, gateway, adminId }
})

/** A fresh sign-in page's form fields for client `cli`. */
const signInForm = (browser: Browser) =>
  Effect.gen(function* () {
    const start = yield* promise(() => startAuthorization(browser))
    const page = yield* promise(() => browser.get(start.headers.get("location") ?? ""))
    return formFields(yield* promise(() => page.text()), "/sso/login/local")
  })

const common = { client_address: "127.0.0.1", request_id: expect.any(String) }

describe("security events", () => {
  it.scoped("a wrong password and an unknown name: auth.sign_in_failed, naming the account only when it exists", () =>
    Effect.gen(function* () {
      const { logs, gateway, adminId } = yield* setup
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      for (const username of ["admin", "nobody-here"]) {
        const answer = yield* promise(() =>
          browser.post("/sso/login/local", { ...fields, username, password: "wrong secret words" })
        )
        expect(answer.status).toBe(401)
      }
      expect(logs.events("auth.sign_in_failed")).toEqual([
        expect.objectContaining({ ...common, reason: "wrong_password", user_id: adminId, client_id: "cli" }),
        expect.objectContaining({ ...common, reason: "unknown_user", user_id: null, client_id: "cli" })
      ])
      expect(logs.text()).not.toContain("wrong secret words")
      expect(logs.text()).not.toContain("nobody-here")
    })
  )

  it.scoped(
    "a lockout: auth.lockout_started once, throttled attempts, auth.lockout_ended at the first attempt after",
    () =>
      Effect.gen(function* () {
        const { logs, gateway, adminId } = yield* setup
        const browser = new Browser(gateway.baseUrl)
        const fields = yield* signInForm(browser)
        const attempt = () =>
          promise(() => browser.post("/sso/login/local", { ...fields, username: "admin", password: "not it at all" }))
        for (let n = 0; n < MAX_ACCOUNT_ADDRESS_FAILURES + 3; n++) yield* attempt()
        expect(logs.events("auth.sign_in_failed")).toHaveLength(MAX_ACCOUNT_ADDRESS_FAILURES)
        expect(logs.events("auth.lockout_started")).toEqual([
          expect.objectContaining({
            ...common,
            user_id: adminId,
            stage: "password",
            window: "account_at_address",
            retry_after_seconds: expect.any(Number)
          })
        ])
        expect(logs.events("auth.sign_in_throttled")).toHaveLength(3)
        expect(logs.events("auth.lockout_ended")).toEqual([])
        yield* TestClock.adjust(WINDOW_MS + 1_000)
        // The login transaction expired meanwhile: a new one, and the right password.
        const later = new Browser(gateway.baseUrl)
        const start = yield* promise(() => startAuthorization(later))
        const page = yield* promise(() => later.get(start.headers.get("location") ?? ""))
        yield* promise(() => signIn(later, page, { totp: {}, nowMs: WINDOW_MS + 1_000 }))
        expect(logs.events("auth.lockout_ended")).toEqual([
          expect.objectContaining({ ...common, user_id: adminId, window: "account_at_address" })
        ])
      })
  )

  it.scoped("a wrong TOTP code: auth.totp_failed; the code is never logged", () =>
    Effect.gen(function* () {
      const { logs, gateway, adminId } = yield* setup
      const totp: { secret?: Uint8Array } = {}
      yield* promise(() => obtainCode(new Browser(gateway.baseUrl), { totp, nowMs: 0 }))
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      const step = yield* promise(async () =>
        browser.follow(
          await browser.post("/sso/login/local", { ...fields, username: "admin", password: ADMIN_PASSWORD })
        )
      )
      const wrong = totpAt(totp.secret!, 0) === "000000" ? "111111" : "000000"
      yield* promise(async () =>
        browser.post("/sso/mfa", { ...formFields(await step.text(), "/sso/mfa"), code: wrong })
      )
      expect(logs.events("auth.totp_failed")).toEqual([
        expect.objectContaining({ ...common, user_id: adminId, client_id: "cli", stage: "totp" })
      ])
      expect(logs.text()).not.toContain(ADMIN_PASSWORD)
    })
  )

  it.scoped("a replayed code and a reused refresh token: their events, then auth.session_revoked", () =>
    Effect.gen(function* () {
      const { logs, gateway, adminId } = yield* setup
      const browser = new Browser(gateway.baseUrl)
      const totp = {}
      const obtained = yield* promise(() => obtainCode(browser, { totp, nowMs: 0, scope: "offline_access" }))
      const first = yield* promise(() => exchange(gateway.baseUrl, obtained))
      yield* promise(() => exchange(gateway.baseUrl, obtained))
      expect(logs.events("auth.code_replayed")).toEqual([
        expect.objectContaining({ ...common, client_id: "cli", session_revoked: true })
      ])
      expect(logs.events("auth.session_revoked")).toEqual([
        expect.objectContaining({
          request_id: expect.any(String),
          reason: "authorization_code_replay",
          user_id: adminId,
          client_id: "cli",
          sessions: [expect.any(String)]
        })
      ])

      const again = yield* promise(() => obtainCode(browser, { totp, nowMs: 0, scope: "offline_access" }))
      const tokens = (yield* promise(() => exchange(gateway.baseUrl, again))).body
      const consumed = String(tokens["refresh_token"])
      yield* promise(() => refresh(gateway.baseUrl, consumed))
      yield* promise(() => refresh(gateway.baseUrl, consumed))
      expect(logs.events("auth.refresh_reused")).toEqual([
        expect.objectContaining({ ...common, client_id: "cli", user_id: adminId, session_id: expect.any(String) })
      ])
      expect(logs.events("auth.session_revoked").map((line) => line["reason"])).toEqual([
        "authorization_code_replay",
        "refresh_token_reuse"
      ])
      for (const secret of [obtained.code, consumed, String(first.body["access_token"])]) {
        expect(logs.text()).not.toContain(secret)
      }
    })
  )

  it.scoped("init-admin --reset: auth.administrator_reset and the revocation it makes", () =>
    Effect.gen(function* () {
      const { logs, gateway, adminId } = yield* setup
      const obtained = yield* promise(() => obtainCode(new Browser(gateway.baseUrl), { totp: {}, nowMs: 0 }))
      yield* promise(() => exchange(gateway.baseUrl, obtained))
      yield* inGateway(gateway)(
        logs.capture(
          initAdmin({
            reset: true,
            resetPassword: true,
            resetMfa: true,
            password: Redacted.make("a brand new passphrase")
          })
        )
      )
      expect(logs.events("auth.administrator_reset")).toEqual([
        expect.objectContaining({ user_id: adminId, password_reset: true, mfa_reset: true, sessions_revoked: 1 })
      ])
      expect(logs.events("auth.session_revoked")).toEqual([
        expect.objectContaining({ reason: "administrator_reset", user_id: adminId, client_id: "cli" })
      ])
      expect(logs.text()).not.toContain("a brand new passphrase")
    })
  )

  it.scoped("a refused Origin: http.origin_refused, at most 10 a minute per address, the origin cut short", () =>
    Effect.gen(function* () {
      const { logs, gateway } = yield* setup
      const origin = `https://${"x".repeat(300)}.example`
      for (let n = 0; n < 12; n++) {
        const answer = yield* promise(() =>
          fetch(gateway.mcpUrl, {
            method: "POST",
            headers: { origin, "content-type": "application/json" },
            body: "{}"
          })
        )
        expect(answer.status).toBe(403)
      }
      const preflight = yield* promise(() => fetch(gateway.mcpUrl, { method: "OPTIONS", headers: { origin } }))
      expect(preflight.status).toBe(403)
      const admin = yield* promise(() => fetch(`${gateway.adminUrl}/api/v1/identities`, { headers: { origin } }))
      expect(admin.status).toBe(403)
      const lines = logs.events("http.origin_refused")
      expect(lines).toHaveLength(10)
      expect(lines[0]).toMatchObject({ client_address: "127.0.0.1", path: "/mcp" })
      expect(String(lines[0]!["origin"]).length).toBeLessThanOrEqual(201)
    })
  )

  it.scoped("rejected tokens: the first from an address at once, the rest as one summary per interval", () =>
    Effect.gen(function* () {
      const { logs, gateway } = yield* setup
      const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
      for (let n = 0; n < 30; n++) {
        const answer = yield* promise(() =>
          fetch(gateway.mcpUrl, {
            method: "POST",
            headers: {
              authorization: `Bearer ${forged}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream"
            },
            body: "{}"
          })
        )
        expect(answer.status).toBe(401)
      }
      // A request without any token is the normal start of an MCP client's sign-in: not a rejection.
      yield* promise(() => fetch(gateway.mcpUrl, { method: "POST", body: "{}" }))
      expect(logs.events("auth.token_rejected")).toEqual([
        expect.objectContaining({
          ...common,
          resource: "mcp",
          reason: "The token's signing algorithm is not accepted."
        })
      ])
      yield* TestClock.adjust("61 seconds")
      expect(logs.events("auth.token_rejected")).toEqual([
        expect.objectContaining({ client_address: "127.0.0.1" }),
        expect.objectContaining({
          client_address: "127.0.0.1",
          count: 29,
          reasons: { "The token's signing algorithm is not accepted.": 29 },
          interval_seconds: 60
        })
      ])
      expect(logs.text()).not.toContain(forged)
    })
  )
})
