/**
 * Spec: Authorization model 1 — users hold no direct scopes; a token carries only the requested scopes
 * its person holds. Until permission groups exist the built-in administrator holds the console's
 * administrative scope (never a backend's or the reviewers'), everyone else nothing; `offline_access`
 * is a request option and stays.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Redacted } from "effect"
import { grantableScope, scopesHeldBy } from "../../src/auth/held-scopes.js"
import { hashPassword } from "../../src/identity/local/password.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { UserRepo } from "../../src/store/users.js"
import { configOf } from "../fixtures/config/base.js"
import {
  Browser,
  beginCodeFlow,
  callbackParams,
  exchange,
  obtainCode,
  refresh,
  signIn
} from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { callerOf } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const scoped = {
  admin: {
    required_scopes: ["gateway:admin", "notes:read"],
    approvals: { policy_changes: { required_scopes: ["gateway:security"] } }
  },
  backends: [{ id: "notes", url: "http://127.0.0.1:9/mcp", allow_insecure_http: true, required_scopes: ["notes:read"] }]
}

const everything = "offline_access gateway:admin notes:read gateway:security"

describe("scopes a user holds", () => {
  it("the administrator holds the administrative scopes only; any other user nothing", () => {
    const config = configOf(scoped)
    expect([...scopesHeldBy(config, { kind: "builtin_admin" })]).toEqual(["gateway:admin"])
    expect([...scopesHeldBy(config, { kind: "local" })]).toEqual([])
    expect([...scopesHeldBy(config, { kind: "enterprise" })]).toEqual([])
    expect(grantableScope(config, { kind: "local" }, ["gateway:admin", "offline_access", "notes:read"])).toEqual([
      "offline_access"
    ])
  })

  it.scoped("the administrator's token carries gateway:admin, never a backend's or the reviewers' scope", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ patch: scoped })
      const browser = new Browser(gateway.baseUrl)
      const obtained = yield* promise(() => obtainCode(browser, { scope: everything, totp: {}, nowMs: 0 }))
      const { body } = yield* promise(() => exchange(gateway.baseUrl, obtained))
      expect(body["scope"]).toBe("offline_access gateway:admin")
      expect(callerOf(String(body["access_token"])).scopes).toEqual(new Set(["offline_access", "gateway:admin"]))
      // A refresh cannot add what was never held.
      const widened = yield* promise(() =>
        refresh(gateway.baseUrl, String(body["refresh_token"]), { scope: "offline_access notes:read" })
      )
      expect(widened.body["error"]).toBe("invalid_scope")
    })
  )

  it.scoped("another local user gets no scope but offline_access, whatever it asks for", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ patch: scoped })
      const password = "another long passphrase"
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const at = new Date(yield* Clock.currentTimeMillis)
          const id = yield* (yield* UserRepo).insertLocal({ kind: "local", username: "alice", displayName: "A", at })
          yield* (yield* LocalCredentialRepo).setPassword(id, yield* hashPassword(Redacted.make(password)), at)
        })
      )
      const browser = new Browser(gateway.baseUrl)
      const redirectUri = "http://127.0.0.1:50000/callback"
      const { response: start, verifier } = yield* promise(() =>
        beginCodeFlow(browser, redirectUri, { scope: everything })
      )
      const page = yield* promise(() => browser.follow(start))
      const done = yield* promise(() => signIn(browser, page, { username: "alice", password, totp: {}, nowMs: 0 }))
      const code = callbackParams(done).get("code") ?? ""
      const { body } = yield* promise(() =>
        exchange(gateway.baseUrl, { code, verifier, redirectUri, clientId: "cli", callback: new URLSearchParams() })
      )
      expect(body["scope"]).toBe("offline_access")
      expect(callerOf(String(body["access_token"])).scopes).toEqual(new Set(["offline_access"]))
    })
  )
})
