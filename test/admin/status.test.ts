/**
 * `GET /api/v1/status` (docs/management-api.md, "Status"): the health picture — each backend's state,
 * last error class and catalog, the generation, both delivery queues, the store's state and latency —
 * for administrators only, on SQLite and PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { freePort } from "../support/gateway-process.js"
import { alphaTools, startBackend } from "../support/mcp-backends.js"
import { oauthGateway } from "../support/oauth-gateway.js"

const PATH = "/api/v1/status"

const backend = Effect.acquireRelease(
  Effect.promise(() => startBackend("alpha", alphaTools)),
  (started) => Effect.promise(() => started.stop())
)

describe.each(storeKinds)("Management API: status (%s)", (kind) => {
  it.scoped("reports backends with their state and error class, the generation, queues, store and tracing", () =>
    Effect.gen(function* () {
      const alpha = yield* backend
      const closed = yield* Effect.promise(freePort)
      const gateway = yield* oauthGateway({
        kind,
        patch: {
          backends: [
            { id: "alpha", url: alpha.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] },
            { id: "gone", url: `http://127.0.0.1:${closed}/mcp`, allow_insecure_http: true, required: false }
          ]
        }
      })
      const answer = yield* managementApi(gateway, yield* adminToken(gateway)).get(PATH)
      expect(answer.status).toBe(200)
      const body = answer.body as Record<string, unknown>
      expect(body).toMatchObject({
        generation: { id: 1 },
        ready: true,
        backends: [
          { id: "alpha", required: true, state: "ready", last_error: null, inherited_catalog: false },
          {
            id: "gone",
            required: false,
            state: "unavailable",
            last_error: "connect",
            tools: null,
            catalog_age_seconds: null
          }
        ],
        outboxes: {
          notifications: { enabled: false, pending: 0 },
          archive: { enabled: false }
        },
        store: { ready: true, reason: null },
        tracing: { enabled: false }
      })
      const [alphaStatus] = body["backends"] as Array<Record<string, unknown>>
      expect(alphaStatus?.["tools"]).toBeGreaterThan(0)
      expect(alphaStatus?.["catalog_age_seconds"]).toBeGreaterThanOrEqual(0)
      const store = body["store"] as Record<string, unknown>
      expect(typeof store["latency_ms"]).toBe("number")
      expect(store["latency_ms"]).toBeGreaterThanOrEqual(0)
      // A backend's own message (its address, say) never appears: only the error's class.
      expect(JSON.stringify(body)).not.toContain(String(closed))
    })
  )

  it.scoped("refuses a request without a token (401) or with a bad one (401)", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      expect((yield* managementApi(gateway).get(PATH)).status).toBe(401)
      expect(yield* managementApi(gateway, "not-a-token").get(PATH)).toMatchObject({
        status: 401,
        body: { error: "invalid_token" }
      })
    })
  )
})
