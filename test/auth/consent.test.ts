/**
 * `client_authorization` (docs/authorization-server.md, "Consent and grants"): a person confirms which
 * client may act for them with which scopes; grants are stored, listed and revocable, and a revoked
 * grant denies the client's next request.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClientGrantRepo } from "../../src/store/client-grants.js"
import { storeKinds } from "../support/databases.js"
import {
  Browser,
  beginCodeFlow,
  callbackParams,
  exchange,
  formFields,
  refresh,
  signIn
} from "../support/oauth-client.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../support/oauth-gateway.js"
import { admits, callerOf } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const withConsent = () => oauthGateway({ patch: { client_authorization: { enabled: true, client_id: "portal" } } })

/** Starts an authorization; returns the first page or redirect after it (sign-in done if needed). */
const authorize = (gateway: OAuthGateway, browser: Browser, clientId: string, totp: { secret?: Uint8Array }) =>
  Effect.gen(function* () {
    const redirectUri = clientId === "portal" ? "http://127.0.0.1:40001/portal" : "http://127.0.0.1:40001/callback"
    const { response: start, verifier } = yield* promise(() =>
      beginCodeFlow(browser, redirectUri, { client_id: clientId, scope: "offline_access gateway:admin" })
    )
    let response = yield* promise(() => browser.follow(start))
    if (response.status === 200) {
      const html = yield* promise(() => response.clone().text())
      if (html.includes('action="/sso/login/local"'))
        response = yield* promise(() => signIn(browser, response, { totp, nowMs: 0 }))
    }
    response = yield* promise(() => browser.follow(response))
    return { response, verifier, redirectUri, gateway }
  })

describe("consent and client grants (client_authorization.enabled)", () => {
  it.scoped("asks once, stores the grant, lists it in the portal, and revoking it cuts the client off", () =>
    Effect.gen(function* () {
      const gateway = yield* withConsent()
      const browser = new Browser(gateway.baseUrl)
      const totp = {}
      const first = yield* authorize(gateway, browser, "cli", totp)
      expect(first.response.status).toBe(200)
      const consent = yield* promise(() => first.response.text())
      expect(consent).toContain("Allow <strong>cli</strong> to act for you?")
      expect(consent).toContain("<code>offline_access</code>")
      expect(first.response.headers.get("content-security-policy")).toContain(
        "form-action 'self' http://127.0.0.1:40001"
      )
      const allowed = yield* promise(() =>
        browser.post("/sso/consent", { ...formFields(consent, "/sso/consent"), decision: "allow" })
      )
      const code = callbackParams(allowed).get("code") ?? ""
      const tokens = yield* promise(() =>
        exchange(gateway.baseUrl, {
          code,
          verifier: first.verifier,
          redirectUri: first.redirectUri,
          clientId: "cli",
          callback: new URLSearchParams()
        })
      )
      expect(tokens.response.status).toBe(200)
      const access = String(tokens.body["access_token"])
      const grant = yield* inGateway(gateway)(
        Effect.flatMap(ClientGrantRepo, (repo) => repo.listForUser(callerOf(access).subject))
      )
      expect(grant.map((row) => [row.client_id, row.scope])).toEqual([["cli", "offline_access gateway:admin"]])

      // Asked once: the next authorization of the same scopes goes straight back with a code.
      const second = yield* authorize(gateway, browser, "cli", totp)
      expect(callbackParams(second.response).get("code")).toEqual(expect.any(String))

      const portal = yield* promise(() => browser.get("/sso/grants"))
      const page = yield* promise(() => portal.text())
      expect(page).toContain("<strong>cli</strong>")
      const revokeForm = formFields(page, "/sso/grants/revoke")
      expect((yield* promise(() => browser.post("/sso/grants/revoke", { ...revokeForm, csrf: "forged" }))).status).toBe(
        403
      )
      const revoked = yield* promise(() => browser.post("/sso/grants/revoke", revokeForm))
      expect([revoked.status, revoked.headers.get("location")]).toEqual([303, "/sso/grants"])
      expect(yield* promise(async () => (await browser.get("/sso/grants")).text())).toContain(
        "No application has access."
      )

      expect(yield* admits(gateway, access)).toBe("session: the session was revoked")
      expect((yield* promise(() => refresh(gateway.baseUrl, String(tokens.body["refresh_token"])))).body["error"]).toBe(
        "invalid_grant"
      )
      const third = yield* authorize(gateway, browser, "cli", totp)
      expect(yield* promise(() => third.response.text())).toContain("to act for you?")
    })
  )

  it.scoped("deny returns access_denied; the portal client itself needs no consent", () =>
    Effect.gen(function* () {
      const gateway = yield* withConsent()
      const browser = new Browser(gateway.baseUrl)
      const totp = {}
      const asked = yield* authorize(gateway, browser, "cli", totp)
      const denied = yield* promise(async () =>
        browser.post("/sso/consent", { ...formFields(await asked.response.text(), "/sso/consent"), decision: "deny" })
      )
      expect(callbackParams(denied).get("error")).toBe("access_denied")
      const portal = yield* authorize(gateway, browser, "portal", totp)
      expect(callbackParams(portal.response).get("code")).toEqual(expect.any(String))
    })
  )
})

describe.each(storeKinds)("consent withdrawn while a code is outstanding (%s)", (kind) => {
  it.scoped("a grant revoked after the code was issued yields no tokens", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({
        kind,
        patch: { client_authorization: { enabled: true, client_id: "portal" } }
      })
      const browser = new Browser(gateway.baseUrl)
      const asked = yield* authorize(gateway, browser, "cli", {})
      const allowed = yield* promise(async () =>
        browser.post("/sso/consent", { ...formFields(await asked.response.text(), "/sso/consent"), decision: "allow" })
      )
      const code = callbackParams(allowed).get("code") ?? ""
      const portal = yield* promise(async () => (await browser.get("/sso/grants")).text())
      const revoked = yield* promise(() => browser.post("/sso/grants/revoke", formFields(portal, "/sso/grants/revoke")))
      expect(revoked.status).toBe(303)
      const tokens = yield* promise(() =>
        exchange(gateway.baseUrl, {
          code,
          verifier: asked.verifier,
          redirectUri: asked.redirectUri,
          clientId: "cli",
          callback: new URLSearchParams()
        })
      )
      expect(tokens.body).toMatchObject({ error: "invalid_grant" })
      expect(tokens.body["access_token"]).toBeUndefined()
    })
  )
})
