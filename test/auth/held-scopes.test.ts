/**
 * docs/authorization-server.md, "Scopes" — users hold no direct scopes; they inherit them from permission
 * groups (the groups' scopes and their roles' administrative scopes). A token carries only the
 * requested scopes its person holds; a refresh renews only what is still held. The built-in
 * administrator holds the console's scope through the Administrators group, never a reviewer's;
 * `offline_access` is a request option and stays.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Redacted } from "effect"
import { hashPassword } from "../../src/identity/local/password.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { GroupRepo } from "../../src/store/groups.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { UserRepo } from "../../src/store/users.js"
import { grantAccessTo, testActor } from "../support/grants.js"
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
  admin: { approvals: { policy_changes: { required_scopes: ["gateway:security"] } } },
  backends: [{ id: "notes", url: "http://127.0.0.1:9/mcp", allow_insecure_http: true, required_scopes: ["notes:read"] }]
}

const everything = "offline_access gateway:admin notes:read gateway:security gateway:approve"

/** A local user `alice` with a password, in the groups `groups` (none: no group). */
const addAlice = (password: string) =>
  Effect.gen(function* () {
    const at = new Date(yield* Clock.currentTimeMillis)
    const id = yield* (yield* UserRepo).insertLocal({ kind: "local", username: "alice", displayName: "A", at })
    yield* (yield* LocalCredentialRepo).setPassword(id, yield* hashPassword(Redacted.make(password)), at)
    return id
  })

/** Alice signs in (password, TOTP enrolment) asking for `everything`; the token response body. */
const aliceSignsIn = (baseUrl: string, password: string) =>
  Effect.promise(async () => {
    const browser = new Browser(baseUrl)
    const redirectUri = "http://127.0.0.1:50000/callback"
    const { response: start, verifier } = await beginCodeFlow(browser, redirectUri, { scope: everything })
    const page = await browser.follow(start)
    const done = await signIn(browser, page, { username: "alice", password, totp: {}, nowMs: 0 })
    const code = callbackParams(done).get("code") ?? ""
    return (await exchange(baseUrl, { code, verifier, redirectUri, clientId: "cli", callback: new URLSearchParams() }))
      .body
  })

describe("scopes a user holds", () => {
  it.scoped(
    "the administrator's token carries gateway:admin (Administrators group), never a backend's or a reviewer's scope",
    () =>
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

  it.scoped("a local user in no group gets no scope but offline_access, whatever it asks for", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ patch: scoped })
      const password = "another long passphrase"
      yield* inGateway(gateway)(addAlice(password))
      const body = yield* aliceSignsIn(gateway.baseUrl, password)
      expect(body["scope"]).toBe("offline_access")
      expect(callerOf(String(body["access_token"])).scopes).toEqual(new Set(["offline_access"]))
    })
  )

  it.scoped("a permission group's scopes and roles are held; a scope removed from the group is not renewed", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ patch: scoped })
      const password = "another long passphrase"
      const groupId = yield* inGateway(gateway)(
        Effect.flatMap(addAlice(password), (id) =>
          grantAccessTo(id, [{ endpoint_id: "notes", tools: ["read"] }], {
            scopes: ["notes:read"],
            roles: ["approver"]
          })
        )
      )
      const body = yield* aliceSignsIn(gateway.baseUrl, password)
      expect(body["scope"]).toBe("offline_access notes:read gateway:approve")
      // The group loses the scope: the next refresh no longer carries it.
      yield* inGateway(gateway)(
        Effect.gen(function* () {
          const group = yield* (yield* GroupRepo).find(groupId)
          yield* (yield* PolicyWrites).updateGroup(testActor, groupId, group!.revision, {
            permissions: { roles: ["approver"], scopes: [], access: group!.permissions!.access }
          })
        })
      )
      const renewed = yield* promise(() => refresh(gateway.baseUrl, String(body["refresh_token"])))
      expect(renewed.body["scope"]).toBe("offline_access gateway:approve")
    })
  )
})
