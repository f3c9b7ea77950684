/**
 * docs/local-accounts.md and docs/management-api.md, "Local accounts": administrators create local
 * accounts waiting for enrolment with a one-time link, the person sets a password and a TOTP
 * authenticator through it and signs in; disable, enable and the resets take If-Match, write an audit
 * event and one security log line, and end the person's sessions; the built-in administrator is not
 * managed here; hostile names and bodies are refused precisely — on SQLite and on PostgreSQL. The link's
 * token never reaches the log.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import { AuditEventRepo } from "../../src/store/audit-events.js"
import { toStoredTimestamp } from "../../src/store/timestamp.js"
import { UserRepo } from "../../src/store/users.js"
import { adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { enrolThroughLink, signInLocal } from "../support/enrolment.js"
import { LogCapture } from "../support/logs.js"
import { refresh } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const PASSWORD = "a long enough password"

type Json = Record<string, unknown>
const accountOf = (body: Json) => body["account"] as Json
const linkOf = (body: Json) => body["enrolment_url"] as string
const tokenOf = (link: string) => new URL(link).searchParams.get("token") ?? ""

const setup = (kind: (typeof storeKinds)[number], logs?: LogCapture) =>
  Effect.gen(function* () {
    const gateway = yield* oauthGateway({ kind, ...(logs === undefined ? {} : { logs }) })
    const api = managementApi(gateway, yield* adminToken(gateway))
    return { gateway, api }
  })

const now = Clock.currentTimeMillis

describe.each(storeKinds)("local accounts (%s)", (kind) => {
  it.scoped(
    "an account is created waiting for enrolment; the person enrols through the link once and signs in by a case-folded name; the token is never logged",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const { gateway, api } = yield* setup(kind, logs)
        const created = yield* api.post("/api/v1/local-accounts", { username: "Bob", display_name: "Bob Builder" })
        expect(created.status).toBe(201)
        // The answer holds the one-time link: no cache on the way keeps it (as every answer of the API).
        expect(created.headers.get("cache-control")).toBe("no-store")
        expect((yield* api.get("/api/v1/local-accounts")).headers.get("cache-control")).toBe("no-store")
        const account = accountOf(created.body)
        expect(account).toMatchObject({
          username: "Bob",
          display_name: "Bob Builder",
          status: "waiting_for_enrolment",
          revision: "1"
        })
        const link = linkOf(created.body)
        expect(link).toMatch(new RegExp(`^${gateway.baseUrl}/sso/enrol\\?token=[A-Za-z0-9_-]{43}$`))
        expect(Date.parse(created.body["enrolment_expires_at"] as string) - (yield* now)).toBe(24 * 60 * 60 * 1000)
        const token = tokenOf(link)

        // Reads never show the link.
        const shown = yield* api.get(`/api/v1/local-accounts/${account["id"]}`)
        expect(shown.status).toBe(200)
        expect(JSON.stringify(shown.body)).not.toContain(token)
        expect(shown.body["enrolment_link_expires_at"]).toBe(created.body["enrolment_expires_at"])
        const listed = yield* api.get("/api/v1/local-accounts")
        expect((listed.body["accounts"] as Array<Json>).map((each) => each["username"])).toEqual(["Bob"])

        // No password without an enrolment: the account cannot sign in yet.
        const early = yield* Effect.promise(() => signInLocal(gateway, "Bob", PASSWORD, new Uint8Array(20), 0))
        expect(early.page).toContain("Wrong user name or password.")

        const enrolled = yield* Effect.promise(async () => enrolThroughLink(link, PASSWORD, 0))
        expect(enrolled.status, enrolled.text).toBe(200)
        expect(enrolled.text).toContain("Your account is ready")
        const after = yield* api.get(`/api/v1/local-accounts/${account["id"]}`)
        expect(after.body).toMatchObject({ status: "enabled", enrolment_link_expires_at: null, revision: "2" })

        // Single use: the same link again is a 410 page.
        const again = yield* Effect.promise(() => enrolThroughLink(link, PASSWORD, 0))
        expect(again.formStatus).toBe(410)
        expect(again.text).toContain("does not work any more")
        expect(again.text).not.toContain(token)

        // The code that confirmed the enrolment is used: sign in at the next TOTP step.
        yield* TestClock.adjust("31 seconds")
        const signedIn = yield* Effect.promise(() => signInLocal(gateway, "bob", PASSWORD, enrolled.secret!, 31_000))
        expect(signedIn.status, JSON.stringify(signedIn)).toBe(200)
        expect(typeof signedIn.body["access_token"]).toBe("string")

        // The audit trail and the log lines, none with the token.
        const events = yield* inGateway(gateway)(
          Effect.flatMap(AuditEventRepo, (audit) => audit.forTarget(account["id"] as string))
        )
        expect(events.map((event) => event.action)).toEqual([
          "identity.local_account_created",
          "identity.local_account_enrolled"
        ])
        expect(logs.events("identity.local_account_created")).toHaveLength(1)
        expect(logs.events("identity.local_account_enrolled")[0]).toMatchObject({ user_id: account["id"] })
        expect(logs.text()).not.toContain(token)
        expect(JSON.stringify(events)).not.toContain(token)
      })
  )

  it.scoped("refuses hostile names and bodies with precise answers, and look-alike names with name_taken", () =>
    Effect.gen(function* () {
      const { api } = yield* setup(kind)
      expect((yield* api.post("/api/v1/local-accounts", { username: "José", display_name: "J" })).status).toBe(201)
      for (const [username, why] of [
        ["bo\u200bb", "U+200B"],
        ["x\u202eevil", "U+202E"],
        ["\u2066bob\u2069", "U+2066"],
        ["bob\ufeff", "U+FEFF"],
        ["b\u0007ob", "control characters"],
        ["bob smith", "must not contain whitespace"],
        ["", "must not be empty"],
        ["x".repeat(65), "at most 64 characters"],
        // A Cyrillic a: reads as the built-in administrator's name.
        ["\u0430dmin", "must not mix scripts within a word (Cyrillic and Latin letters: U+0064 at index 1)"]
      ] as const) {
        const refused = yield* api.post("/api/v1/local-accounts", { username, display_name: "Someone" })
        expect(refused.status, JSON.stringify(username)).toBe(400)
        expect(refused.body["error"]).toBe("invalid_request")
        expect(refused.body["error_description"]).toContain("username:")
        expect(refused.body["error_description"]).toContain(why)
      }
      // Case-folded and normalized duplicates, and the built-in administrator's name.
      for (const [username, existing] of [
        ["JOSÉ", "José"],
        ["Jose\u0301", "José"],
        ["ADMIN", "admin"]
      ] as const) {
        const taken = yield* api.post("/api/v1/local-accounts", { username, display_name: "Someone" })
        expect(taken.status, username).toBe(409)
        expect(taken.body["error"]).toBe("name_taken")
        expect(taken.body["error_description"]).toContain(`"${existing}"`)
      }
      // Names that look like an existing one (UTS #39 skeletons): a digit for a letter, rn for m.
      for (const [username, existing] of [
        ["adrnin", "admin"],
        ["J0sé", "José"]
      ] as const) {
        const similar = yield* api.post("/api/v1/local-accounts", { username, display_name: "Someone" })
        expect(similar.status, username).toBe(409)
        expect(similar.body["error"]).toBe("name_taken")
        expect(similar.body["error_description"]).toContain(`looks like the local account "${existing}"`)
      }
      const unknown = yield* api.post("/api/v1/local-accounts", { username: "carol", display_name: "C", admin: true })
      expect(unknown.status).toBe(400)
      expect(unknown.body["error_description"]).toContain("admin")
      const missing = yield* api.post("/api/v1/local-accounts", { username: "carol" })
      expect(missing.status).toBe(400)
      expect(missing.body["error_description"]).toContain("display_name")
      const badDisplay = yield* api.post("/api/v1/local-accounts", { username: "carol", display_name: "C\u202e" })
      expect(badDisplay.status).toBe(400)
      expect(badDisplay.body["error_description"]).toContain("display_name:")
      const listed = yield* api.get("/api/v1/local-accounts")
      expect((listed.body["accounts"] as Array<Json>).map((each) => each["username"])).toEqual(["José"])
    })
  )

  it.scoped(
    "actions need the current If-Match; the built-in administrator and enterprise ids are refused; bodies must be empty objects",
    () =>
      Effect.gen(function* () {
        const { gateway, api } = yield* setup(kind)
        const created = yield* api.post("/api/v1/local-accounts", { username: "dave", display_name: "Dave" })
        const id = accountOf(created.body)["id"] as string
        const noMatch = yield* api.post(`/api/v1/local-accounts/${id}/disable`, undefined)
        expect(noMatch.status).toBe(428)
        const stale = yield* api.post(`/api/v1/local-accounts/${id}/disable`, undefined, { "if-match": '"7"' })
        expect(stale.status).toBe(412)
        expect(stale.body["error_description"]).toContain('its revision is now "1"')
        const extra = yield* api.post(`/api/v1/local-accounts/${id}/disable`, { force: true }, { "if-match": '"1"' })
        expect(extra.status).toBe(400)
        expect(extra.body["error_description"]).toContain("force")
        const disabled = yield* api.post(`/api/v1/local-accounts/${id}/disable`, {}, { "if-match": '"1"' })
        expect(disabled.status).toBe(200)
        expect(disabled.body).toMatchObject({ status: "disabled", revision: "2", enrolment_link_expires_at: null })
        // A disabled account's link is dead, and it cannot be reset until enabled.
        const dead = yield* Effect.promise(() => enrolThroughLink(linkOf(created.body), PASSWORD, 0))
        expect(dead.formStatus).toBe(410)
        const refusedReset = yield* api.post(
          `/api/v1/local-accounts/${id}/reset-password`,
          undefined,
          ifMatch(disabled.body)
        )
        expect(refusedReset.status).toBe(409)
        expect(refusedReset.body["error"]).toBe("account_disabled")
        // Enabled again without ever enrolling: it waits for a new link.
        const enabled = yield* api.post(`/api/v1/local-accounts/${id}/enable`, undefined, ifMatch(disabled.body))
        expect(enabled.body).toMatchObject({ status: "waiting_for_enrolment", revision: "3" })

        const admin = yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))
        const adminId = Option.getOrThrow(admin).id
        for (const path of [`/api/v1/local-accounts/${adminId}`]) {
          const refused = yield* api.get(path)
          expect(refused.status).toBe(400)
          expect(refused.body["error"]).toBe("builtin_administrator")
          expect(refused.body["error_description"]).toContain("gateway init-admin --reset")
        }
        const resetAdmin = yield* api.post(`/api/v1/local-accounts/${adminId}/reset-mfa`, undefined, {
          "if-match": '"1"'
        })
        expect(resetAdmin.status).toBe(400)
        expect(resetAdmin.body["error"]).toBe("builtin_administrator")
        const missing = yield* api.post("/api/v1/local-accounts/nobody/disable", undefined, { "if-match": '"1"' })
        expect(missing.status).toBe(404)
        const listed = yield* api.get("/api/v1/local-accounts")
        expect((listed.body["accounts"] as Array<Json>).map((each) => each["id"])).toEqual([id])
      })
  )

  it.scoped(
    "disable ends sessions and refresh tokens; a reset removes both factors, supersedes the link and ends sessions; an expired link is refused",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const { gateway, api } = yield* setup(kind, logs)
        const created = yield* api.post("/api/v1/local-accounts", { username: "erin", display_name: "Erin" })
        const id = accountOf(created.body)["id"] as string
        // A newer link replaces the older one.
        const reset1 = yield* api.post(`/api/v1/local-accounts/${id}/reset-password`, undefined, { "if-match": '"1"' })
        expect(reset1.status).toBe(200)
        expect(linkOf(reset1.body)).not.toBe(linkOf(created.body))
        expect((yield* Effect.promise(() => enrolThroughLink(linkOf(created.body), PASSWORD, 0))).formStatus).toBe(410)
        const enrolled = yield* Effect.promise(() => enrolThroughLink(linkOf(reset1.body), PASSWORD, 0))
        expect(enrolled.status).toBe(200)
        yield* TestClock.adjust("31 seconds")
        const first = yield* Effect.promise(() => signInLocal(gateway, "erin", PASSWORD, enrolled.secret!, 31_000))
        const refreshToken = first.body["refresh_token"] as string
        expect(typeof refreshToken).toBe("string")

        // Reset MFA: the old password and authenticator stop working, the sessions end.
        const current = yield* api.get(`/api/v1/local-accounts/${id}`)
        const reset2 = yield* api.post(`/api/v1/local-accounts/${id}/reset-mfa`, undefined, ifMatch(current.body))
        expect(reset2.status).toBe(200)
        expect(accountOf(reset2.body)["status"]).toBe("waiting_for_enrolment")
        const refused = yield* Effect.promise(() => refresh(gateway.baseUrl, refreshToken))
        expect(refused.response.status).toBe(400)
        yield* TestClock.adjust("31 seconds")
        const oldFactors = yield* Effect.promise(() => signInLocal(gateway, "erin", PASSWORD, enrolled.secret!, 62_000))
        expect(oldFactors.page).toContain("Wrong user name or password.")
        expect(logs.events("identity.local_account_mfa_reset")[0]).toMatchObject({ target_id: id, sessions_revoked: 1 })

        // Enrol again, sign in, then disable: the refresh token stops working.
        const again = yield* Effect.promise(() =>
          enrolThroughLink(linkOf(reset2.body), "another long password", 62_000)
        )
        expect(again.status).toBe(200)
        yield* TestClock.adjust("31 seconds")
        const second = yield* Effect.promise(() =>
          signInLocal(gateway, "erin", "another long password", again.secret!, 93_000)
        )
        expect(second.status).toBe(200)
        const latest = yield* api.get(`/api/v1/local-accounts/${id}`)
        const disabled = yield* api.post(`/api/v1/local-accounts/${id}/disable`, undefined, ifMatch(latest.body))
        expect(disabled.status).toBe(200)
        const afterDisable = yield* Effect.promise(() =>
          refresh(gateway.baseUrl, second.body["refresh_token"] as string)
        )
        expect(afterDisable.response.status).toBe(400)
        expect(logs.events("identity.local_account_disabled")[0]).toMatchObject({ target_id: id, sessions_revoked: 1 })

        // An expired link. The 24 hours themselves are checked above (enrolment_expires_at); here the
        // stored expiry is brought to now, the boundary, rather than moving the TestClock a day: a day
        // on it runs every background loop's ticks (about 200,000), 15-40 s of a test run.
        const fresh = yield* api.post("/api/v1/local-accounts", { username: "frank", display_name: "Frank" })
        const freshId = accountOf(fresh.body)["id"] as string
        const at = toStoredTimestamp(new Date(yield* Clock.currentTimeMillis))
        yield* inGateway(gateway)(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`UPDATE enrolment_links SET expires_at = ${at} WHERE user_id = ${freshId}`
          )
        )
        const expired = yield* Effect.promise(() => enrolThroughLink(linkOf(fresh.body), PASSWORD, 0))
        expect(expired.formStatus).toBe(410)
      }),
    // Six scrypt hashes and four TOTP sign-ins: ~5 s alone, more beside another worker.
    60_000
  )
})
