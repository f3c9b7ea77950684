/**
 * `GET /api/v1/approvals/delivery` (docs/management-api.md): the approval webhook and audit archive
 * queues' figures, for the `admin` and `security_reviewer` roles only, on SQLite and PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { signingKey64 } from "../fixtures/config/base.js"
import { addLocalUser, adminToken, managementApi, signInForAdminToken } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { grantAccessTo } from "../support/grants.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const PATH = "/api/v1/approvals/delivery"
const notConfigured = {
  notifications: { enabled: false, pending: 0, failed: 0, oldest_pending_age_seconds: null, last_error: null },
  archive: { enabled: false, pending: 0, failed: 0, oldest_pending_age_seconds: null, last_error: null }
}

describe.each(storeKinds)("Management API: approval delivery status (%s)", (kind) => {
  it.scoped(
    "answers the admin and security_reviewer roles; no token 401, a bad token 401, an approver or a plain user 403",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const admin = yield* managementApi(gateway, yield* adminToken(gateway)).get(PATH)
        expect(admin).toMatchObject({ status: 200, body: notConfigured })
        expect((yield* managementApi(gateway).get(PATH)).status).toBe(401)
        expect(yield* managementApi(gateway, "not-a-token").get(PATH)).toMatchObject({
          status: 401,
          body: { error: "invalid_token" }
        })
        const password = "a long enough passphrase"
        const people = [
          ["plain", [], "gateway:admin"],
          ["approver", ["approver"], "gateway:approve"],
          ["reviewer", ["security_reviewer"], "gateway:security"]
        ] as const
        let nowMs = 0
        const answers: Record<string, number> = {}
        for (const [name, roles, scope] of people) {
          const id = yield* addLocalUser(gateway, name, password)
          yield* inGateway(gateway)(grantAccessTo(id, [], { roles: [...roles] }))
          yield* TestClock.adjust("31 seconds")
          nowMs += 31_000
          const token = yield* signInForAdminToken(gateway, name, password, {}, nowMs, scope)
          const answer = yield* managementApi(gateway, String(token["access_token"] ?? "")).get(PATH)
          answers[name] = answer.status
          if (answer.status === 403) expect(answer.body).toMatchObject({ error: "insufficient_scope" })
          if (answer.status === 200) expect(answer.body).toEqual(notConfigured)
        }
        expect(answers).toEqual({ plain: 403, approver: 403, reviewer: 200 })
      })
  )

  it.scoped("reports each queue as configured: notifications and the audit archive from their stores", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({
        kind,
        patch: {
          admin: {
            approvals: {
              notifications: { url: "https://127.0.0.1:9/hook", secret: "s".repeat(40) },
              audit_archive: {
                url: "https://127.0.0.1:9/archive",
                key_id: "k1",
                signing_key: signingKey64
              }
            }
          }
        }
      })
      const answer = yield* managementApi(gateway, yield* adminToken(gateway)).get(PATH)
      expect(answer).toMatchObject({
        status: 200,
        body: {
          notifications: { enabled: true, pending: 0, failed: 0, oldest_pending_age_seconds: null, last_error: null },
          archive: { enabled: true, pending: 0, failed: 0, oldest_pending_age_seconds: null, last_error: null }
        }
      })
    })
  )
})
