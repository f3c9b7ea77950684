/**
 * A local account's status has one set of rules (docs/local-accounts.md, "Life of an account";
 * src/policy/local-account-status.ts), whether an administrator uses `/api/v1/local-accounts/{id}/…` or
 * `PUT /api/v1/identities/{id}`: disabling there deletes the enrolment link and ends every session,
 * refresh token and browser session; enabling an account that has not enrolled is refused `409
 * enrolment_pending` (so it never counts as an administrator); a body without `enabled` changes only
 * the groups; the built-in administrator keeps its own rules — on SQLite and on PostgreSQL.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { AuditEventRepo } from "../../src/store/audit-events.js"
import { UserRepo } from "../../src/store/users.js"
import { adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { enrolThroughLink, signInLocal } from "../support/enrolment.js"
import { createGroup } from "../support/grants.js"
import { refresh } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const PASSWORD = "a long enough password"

type Json = Record<string, unknown>

const setup = (kind: (typeof storeKinds)[number]) =>
  Effect.gen(function* () {
    const gateway = yield* oauthGateway({ kind })
    const api = managementApi(gateway, yield* adminToken(gateway))
    const recordOf = (id: string) =>
      Effect.map(
        api.get("/api/v1/identities"),
        (listed) =>
          [...(listed.body["users"] as Array<Json>), ...(listed.body["groups"] as Array<Json>)].find(
            (record) => record["id"] === id
          )!
      )
    const create = (username: string) =>
      Effect.map(api.post("/api/v1/local-accounts", { username, display_name: username }), (created) => ({
        id: (created.body["account"] as Json)["id"] as string,
        link: created.body["enrolment_url"] as string
      }))
    const openBrowserSessions = (userId: string) =>
      inGateway(gateway)(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM browser_sessions
            WHERE user_id = ${userId} AND revoked_at IS NULL`.pipe(Effect.orDie)
        )
      ).pipe(Effect.map((rows) => Number(rows[0]!.n)))
    return { gateway, api, recordOf, create, openBrowserSessions }
  })

describe.each(storeKinds)("a local account's status through PUT /api/v1/identities (%s)", (kind) => {
  it.scoped(
    "enabled: false on an account waiting for enrolment disables it and kills its link; no enabled changes only its groups",
    () =>
      Effect.gen(function* () {
        const { gateway, api, recordOf, create } = yield* setup(kind)
        const { id, link } = yield* create("gina")
        const groupId = yield* inGateway(gateway)(createGroup([]))

        // Groups only: the account still waits for enrolment, its link still offered.
        const grouped = yield* api.put(`/api/v1/identities/${id}`, { groups: [groupId] }, ifMatch(yield* recordOf(id)))
        expect(grouped.status, JSON.stringify(grouped.body)).toBe(200)
        expect(grouped.body).toMatchObject({ status: "pending", enabled: false, revision: "2" })
        expect((grouped.body["groups"] as Array<Json>).map((group) => group["id"])).toEqual([groupId])
        const waiting = yield* api.get(`/api/v1/local-accounts/${id}`)
        expect(waiting.body).toMatchObject({ status: "waiting_for_enrolment" })
        expect(waiting.body["enrolment_link_expires_at"]).not.toBeNull()

        const disabled = yield* api.put(`/api/v1/identities/${id}`, { enabled: false }, ifMatch(grouped.body))
        expect(disabled.status).toBe(200)
        expect(disabled.body).toMatchObject({ status: "disabled", enabled: false, revision: "3" })
        expect((yield* api.get(`/api/v1/local-accounts/${id}`)).body).toMatchObject({
          status: "disabled",
          enrolment_link_expires_at: null
        })
        const dead = yield* Effect.promise(() => enrolThroughLink(link, PASSWORD, 0))
        expect(dead.formStatus).toBe(410)
        const events = yield* inGateway(gateway)(Effect.flatMap(AuditEventRepo, (audit) => audit.forTarget(id)))
        expect(events.at(-1)?.action).toBe("identity.user_updated")
        expect(JSON.parse(events.at(-1)!.detail)).toMatchObject({ status: { before: "pending", after: "disabled" } })
      })
  )

  it.scoped(
    "enabled: true on an account that never enrolled is refused 409 enrolment_pending naming /api/v1/local-accounts, and it never counts as an administrator",
    () =>
      Effect.gen(function* () {
        const { gateway, api, recordOf, create } = yield* setup(kind)
        const { id, link } = yield* create("hank")
        // In Administrators, still waiting for enrolment.
        const joined = yield* api.put(
          `/api/v1/identities/${id}`,
          { groups: ["administrators"] },
          ifMatch(yield* recordOf(id))
        )
        expect(joined.body).toMatchObject({ status: "pending", revision: "2" })

        const refused = yield* api.put(`/api/v1/identities/${id}`, { enabled: true }, ifMatch(joined.body))
        expect(refused.status).toBe(409)
        expect(refused.body["error"]).toBe("enrolment_pending")
        expect(refused.body["error_description"]).toContain(`/api/v1/local-accounts/${id}`)
        expect(yield* recordOf(id)).toMatchObject({ status: "pending", enabled: false, revision: "2" })

        // Not an administrator: the built-in administrator is still the last one.
        const admin = Option.getOrThrow(
          yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))
        )
        const leave = yield* api.put(
          `/api/v1/identities/${admin.id}`,
          { enabled: true, groups: [] },
          ifMatch(yield* recordOf(admin.id))
        )
        expect(leave).toMatchObject({ status: 409, body: { error: "last_administrator" } })

        // Disabled before enrolling, then enabled here: refused the same way.
        const off = yield* api.post(`/api/v1/local-accounts/${id}/disable`, {}, ifMatch(joined.body))
        expect(off.body).toMatchObject({ status: "disabled", revision: "3" })
        const again = yield* api.put(`/api/v1/identities/${id}`, { enabled: true }, { "if-match": '"3"' })
        expect(again).toMatchObject({ status: 409, body: { error: "enrolment_pending" } })
        expect(yield* recordOf(id)).toMatchObject({ status: "disabled", revision: "3" })
        expect((yield* Effect.promise(() => enrolThroughLink(link, PASSWORD, 0))).formStatus).toBe(410)
      })
  )

  it.scoped(
    "disabling an enrolled account ends its sessions, refresh tokens and /sso browser sessions, as /disable does; enabling it again works",
    () =>
      Effect.gen(function* () {
        const { gateway, api, recordOf, create, openBrowserSessions } = yield* setup(kind)
        const { id, link } = yield* create("iris")
        const enrolled = yield* Effect.promise(() => enrolThroughLink(link, PASSWORD, 0))
        expect(enrolled.status).toBe(200)
        yield* TestClock.adjust("31 seconds")
        const signedIn = yield* Effect.promise(() => signInLocal(gateway, "iris", PASSWORD, enrolled.secret!, 31_000))
        expect(signedIn.status).toBe(200)
        expect(yield* openBrowserSessions(id)).toBeGreaterThan(0)

        const disabled = yield* api.put(`/api/v1/identities/${id}`, { enabled: false }, ifMatch(yield* recordOf(id)))
        expect(disabled.body).toMatchObject({ status: "disabled", enabled: false })
        expect(yield* openBrowserSessions(id)).toBe(0)
        const refused = yield* Effect.promise(() => refresh(gateway.baseUrl, signedIn.body["refresh_token"] as string))
        expect(refused.response.status).toBe(400)

        const enabled = yield* api.put(`/api/v1/identities/${id}`, { enabled: true }, ifMatch(disabled.body))
        expect(enabled.body).toMatchObject({ status: "enabled", enabled: true })
        expect((yield* api.get(`/api/v1/local-accounts/${id}`)).body).toMatchObject({ status: "enabled" })
      })
  )

  it.scoped("the built-in administrator keeps its own rules", () =>
    Effect.gen(function* () {
      const { gateway, api, recordOf } = yield* setup(kind)
      const admin = Option.getOrThrow(
        yield* inGateway(gateway)(Effect.flatMap(UserRepo, (users) => users.findBuiltinAdmin))
      )
      const path = `/api/v1/identities/${admin.id}`
      const current = yield* recordOf(admin.id)
      const groups = (current["groups"] as Array<Json>).map((group) => group["id"])
      const same = yield* api.put(path, { enabled: true, groups }, ifMatch(current))
      expect(same.status, JSON.stringify(same.body)).toBe(200)
      expect(same.body).toMatchObject({ status: "enabled", enabled: true })
      const groupsOnly = yield* api.put(path, { groups }, ifMatch(same.body))
      expect(groupsOnly.body).toMatchObject({ status: "enabled" })
      const disable = yield* api.put(path, { enabled: false }, ifMatch(groupsOnly.body))
      expect(disable).toMatchObject({ status: 409, body: { error: "last_administrator" } })
      // Its admin token still works: no session of it was touched.
      expect((yield* api.get("/api/v1/identities")).status).toBe(200)
    })
  )
})
