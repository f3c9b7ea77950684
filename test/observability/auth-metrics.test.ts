/**
 * The sign-in and refresh metrics (docs/operations.md, "Metrics"), moved by real sign-ins at `/sso` and
 * real token requests: a local sign-in that succeeds and one that fails, a refresh that rotates and the
 * reuse of the consumed refresh token; each by exactly one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { metrics } from "../../src/observability/metrics.js"
import { Browser, exchange, formFields, obtainCode, refresh, startAuthorization } from "../support/oauth-client.js"
import { oauthGateway } from "../support/oauth-gateway.js"
import { sampleValue } from "../support/prometheus.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const exposition = promise(() => metrics.exposition())

describe("sign-in and refresh metrics", () => {
  it.scoped("count a local sign-in's success and failure, a refresh rotation and a refresh reuse, one each", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const browser = new Browser(gateway.baseUrl)
      const before = yield* exposition
      const moved = (after: string, name: string, labels: Record<string, string> = {}) =>
        sampleValue(after, name, labels) - sampleValue(before, name, labels)

      const start = yield* promise(() => startAuthorization(browser))
      const page = yield* promise(() => browser.get(start.headers.get("location") ?? ""))
      const fields = formFields(yield* promise(() => page.text()), "/sso/login/local")
      const wrong = yield* promise(() =>
        browser.post("/sso/login/local", { ...fields, username: "admin", password: "wrong secret words" })
      )
      expect(wrong.status).toBe(401)

      const obtained = yield* promise(() => obtainCode(browser, { totp: {}, nowMs: 0, scope: "offline_access" }))
      const tokens = (yield* promise(() => exchange(gateway.baseUrl, obtained))).body
      const consumed = String(tokens["refresh_token"])
      expect((yield* promise(() => refresh(gateway.baseUrl, consumed))).response.status).toBe(200)
      expect((yield* promise(() => refresh(gateway.baseUrl, consumed))).response.status).toBe(400)

      const after = yield* exposition
      expect(moved(after, "gateway_sign_ins_total", { provider: "local", result: "failed" })).toBe(1)
      expect(moved(after, "gateway_sign_ins_total", { provider: "local", result: "success" })).toBe(1)
      expect(moved(after, "gateway_refresh_rotations_total")).toBe(1)
      expect(moved(after, "gateway_refresh_reuse_detected_total")).toBe(1)
      expect(moved(after, "gateway_security_events_total", { event: "auth.refresh_reused" })).toBe(1)
      expect(moved(after, "gateway_security_events_total", { event: "auth.sign_in_failed" })).toBe(1)
    })
  )
})
