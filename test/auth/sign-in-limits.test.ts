/**
 * Failed sign-in throttling per account and per address, and the limits (docs/authorization-server.md) —
 * over real HTTP: parallel bursts cannot start more password or TOTP checks than the limit, an attacker at
 * one address cannot lock out the administrator at another (`server.trusted_proxies`), oversized names
 * never reach the throttle, and pending sign-ins are capped per client address.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { MAX_TRANSACTIONS_PER_ADDRESS } from "../../src/auth/pending.js"
import { MAX_ACCOUNT_ADDRESS_FAILURES } from "../../src/auth/throttle.js"
import { hashPassword } from "../../src/identity/local/password.js"
import { totpAt } from "../../src/identity/local/totp.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { UserRepo } from "../../src/store/users.js"
import { Browser, callbackParams, formFields, obtainCode, signIn, startAuthorization } from "../support/oauth-client.js"
import { ADMIN_PASSWORD, inGateway, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const authorizeFor = (browser: Browser, headers: Record<string, string> = {}) =>
  promise(() => startAuthorization(browser, {}, headers))

/** A fresh login transaction's sign-in page fields, as seen from `headers` (e.g. X-Forwarded-For). */
const signInForm = (browser: Browser, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const start = yield* authorizeFor(browser, headers)
    const page = yield* promise(() => browser.get(start.headers.get("location") ?? "", headers))
    return formFields(yield* promise(() => page.text()), "/sso/login/local")
  })

const statuses = (responses: ReadonlyArray<Response>) => {
  const counts: Record<number, number> = {}
  for (const response of responses) counts[response.status] = (counts[response.status] ?? 0) + 1
  return counts
}

/** A new gateway's sign-in form, and a function posting a user name and password to it from one address. */
const passwordPoster = Effect.gen(function* () {
  const gateway = yield* oauthGateway()
  const browser = new Browser(gateway.baseUrl)
  const fields = yield* signInForm(browser)
  return (username: string, password: string) =>
    promise(() => browser.post("/sso/login/local", { ...fields, username, password }))
})

describe("sign-in limits over HTTP", () => {
  it.scoped("400 parallel wrong passwords: at most the limit are checked, the rest are 429", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      const responses = yield* promise(() =>
        Promise.all(
          Array.from({ length: 400 }, () =>
            browser.post("/sso/login/local", { ...fields, username: "admin", password: "wrong password" })
          )
        )
      )
      // 401 means a password was really checked (scrypt ran); 429 means it was refused before.
      expect(statuses(responses)).toEqual({
        401: MAX_ACCOUNT_ADDRESS_FAILURES,
        429: 400 - MAX_ACCOUNT_ADDRESS_FAILURES
      })
    })
  )

  it.scoped("50 parallel wrong TOTP codes: at most the limit are checked", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const totp: { secret?: Uint8Array } = {}
      yield* promise(() => obtainCode(new Browser(gateway.baseUrl), { totp, nowMs: 0 }))
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      const step = yield* promise(async () =>
        browser.follow(
          await browser.post("/sso/login/local", { ...fields, username: "admin", password: ADMIN_PASSWORD })
        )
      )
      const mfa = formFields(yield* promise(() => step.text()), "/sso/mfa")
      const wrong = totpAt(totp.secret!, 0) === "000000" ? "111111" : "000000"
      const responses = yield* promise(() =>
        Promise.all(Array.from({ length: 50 }, () => browser.post("/sso/mfa", { ...mfa, code: wrong })))
      )
      expect(statuses(responses)).toEqual({ 401: MAX_ACCOUNT_ADDRESS_FAILURES, 429: 50 - MAX_ACCOUNT_ADDRESS_FAILURES })
    })
  )

  it.scoped("behind a trusted proxy, failures from address A do not block the administrator at address B", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ server: { trusted_proxies: ["127.0.0.1"] } })
      const attacker = new Browser(gateway.baseUrl)
      const fromA = { "x-forwarded-for": "203.0.113.66" }
      const fields = yield* signInForm(attacker, fromA)
      for (let index = 0; index < 10; index++) {
        yield* promise(() =>
          attacker.post("/sso/login/local", { ...fields, username: "admin", password: "guess" }, fromA)
        )
      }
      const locked = yield* promise(() =>
        attacker.post("/sso/login/local", { ...fields, username: "admin", password: ADMIN_PASSWORD }, fromA)
      )
      expect(locked.status).toBe(429)

      const admin = new Browser(gateway.baseUrl)
      const fromB = { "x-forwarded-for": "198.51.100.20" }
      const start = yield* authorizeFor(admin, fromB)
      const page = yield* promise(() => admin.get(start.headers.get("location") ?? "", fromB))
      const html = yield* promise(() => page.text())
      const password = yield* promise(() =>
        admin.post(
          "/sso/login/local",
          { ...formFields(html, "/sso/login/local"), username: "admin", password: ADMIN_PASSWORD },
          fromB
        )
      )
      expect([password.status, password.headers.get("location")]).toEqual([
        303,
        expect.stringMatching(/^\/sso\?login=/)
      ])
    })
  )

  it.scoped("a password reset while the gateway runs (init-admin --reset) lifts the lockout it caused", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      const post = (password: string) =>
        promise(() => browser.post("/sso/login/local", { ...fields, username: "admin", password }))
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        expect((yield* post("forgotten password")).status).toBe(401)
      }
      expect((yield* post(ADMIN_PASSWORD)).status).toBe(429)
      // What init-admin --reset writes, from outside the running gateway's throttle.
      const fresh = "a brand new password 42"
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const admin = yield* (yield* UserRepo).findLocalByUsername("admin")
          const hash = yield* hashPassword(Redacted.make(fresh))
          yield* (yield* LocalCredentialRepo).setPassword(Option.getOrThrow(admin).id, hash, new Date())
        })
      )
      // The old password is simply wrong now, and counts again; the new one signs in.
      expect((yield* post(ADMIN_PASSWORD)).status).toBe(401)
      const signedIn = yield* post(fresh)
      expect([signedIn.status, signedIn.headers.get("location")]).toEqual([
        303,
        expect.stringMatching(/^\/sso\?login=/)
      ])
    })
  )

  it.scoped("a lockout is not lifted for a name whose password did not change since the failures", () =>
    Effect.gen(function* () {
      const post = yield* passwordPoster
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) yield* post("admin", "guess")
      expect((yield* post("admin", ADMIN_PASSWORD)).status).toBe(429)
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) yield* post("nobody", "guess")
      expect((yield* post("nobody", "guess")).status).toBe(429)
    })
  )

  it.scoped("a name spelled otherwise (spaces, invisible characters, case) is the same account to the limit", () =>
    Effect.gen(function* () {
      const post = yield* passwordPoster
      // Each spelling signs in as the administrator, so each failure counts against that one account.
      const spellings = ["admin", " admin", "admin ", "ad\u200bmin", "ADMIN\u00ad"]
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        expect((yield* post(spellings[index % spellings.length]!, "guess")).status).toBe(401)
      }
      for (const spelling of [...spellings, "admin\ufe0f"]) {
        expect((yield* post(spelling, ADMIN_PASSWORD)).status, JSON.stringify(spelling)).toBe(429)
      }
    })
  )

  it.scoped("without trusted proxies X-Forwarded-For is ignored: it cannot dodge the limit", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      for (let index = 0; index < MAX_ACCOUNT_ADDRESS_FAILURES; index++) {
        const forged = { "x-forwarded-for": `203.0.113.${index}` }
        expect(
          (yield* promise(() =>
            browser.post("/sso/login/local", { ...fields, username: "admin", password: "x" }, forged)
          )).status
        ).toBe(401)
      }
      const next = yield* promise(() =>
        browser.post(
          "/sso/login/local",
          { ...fields, username: "admin", password: "x" },
          { "x-forwarded-for": "198.51.100.1" }
        )
      )
      expect(next.status).toBe(429)
    })
  )

  it.scoped("a name over 256 characters is refused before the throttle and scrypt", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const fields = yield* signInForm(browser)
      for (let index = 0; index < 30; index++) {
        const response = yield* promise(() =>
          browser.post("/sso/login/local", { ...fields, username: `admin${"x".repeat(252)}`, password: "x" })
        )
        expect(response.status).toBe(400)
      }
      // Thirty refusals counted nothing: the address's 20 failures were not used up.
      const page = yield* promise(() => browser.get(`/sso?login=${fields["login"]}`))
      const done = yield* promise(() => signIn(browser, page, { totp: {}, nowMs: 0 }))
      expect(callbackParams(done).get("code")).toEqual(expect.any(String))
    })
  )

  it.scoped("pending sign-ins are capped per client address; other addresses still start", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ server: { trusted_proxies: ["127.0.0.1"] } })
      const flooder = new Browser(gateway.baseUrl)
      const fromA = { "x-forwarded-for": "203.0.113.66" }
      for (let index = 0; index < MAX_TRANSACTIONS_PER_ADDRESS; index++) {
        expect((yield* promise(() => flooder.get("/sso", fromA))).status).toBe(200)
      }
      const refused = yield* promise(() => flooder.get("/sso", fromA))
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
      expect((yield* authorizeFor(flooder, fromA)).status).toBe(429)

      const other = new Browser(gateway.baseUrl)
      const start = yield* authorizeFor(other, { "x-forwarded-for": "198.51.100.20" })
      expect([start.status, start.headers.get("location")]).toEqual([303, expect.stringMatching(/^\/sso\?login=/)])
    })
  )
})
