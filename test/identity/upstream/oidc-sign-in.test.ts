/**
 * docs/enterprise-sign-in.md — sign-in through a real OpenID Provider (oidc-provider over HTTPS with
 * a test CA): authorization code with PKCE S256, state and nonce; the person arrives pending and the
 * client hears `access_denied` with reason `account_access_required` until an administrator enables
 * them; groups and departments come from verified ID-token claims; the tenant restriction holds; a
 * replayed callback finds nothing; every refusal writes one `auth.upstream_sign_in_refused` line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { decodeJwt } from "jose"
import { namespaceOf } from "../../../src/identity/upstream/connection.js"
import { MembershipRepo } from "../../../src/store/memberships.js"
import { UserRepo } from "../../../src/store/users.js"
import { adminToken, ifMatch, managementApi } from "../../support/admin-api.js"
import {
  gatewayWithUpstream,
  providerForPort,
  signInThroughUpstream,
  upstreamLink
} from "../../support/enterprise-sign-in.js"
import { freePort } from "../../support/gateway-process.js"
import { Browser, beginCodeFlow, callbackParams, exchange } from "../../support/oauth-client.js"
import { inGateway } from "../../support/oauth-gateway.js"
import type { OidcProvider } from "../../support/oidc-provider.js"

const withProvider = (tokenAuthMethod?: "client_secret_post" | "client_secret_basic") =>
  Effect.gen(function* () {
    const port = yield* Effect.promise(freePort)
    const provider = yield* providerForPort(port, tokenAuthMethod === undefined ? {} : { tokenAuthMethod })
    return { port, provider }
  })

const alice = { name: "Alice Example", groups: ["eng", "oncall"], departments: ["R&D"], tid: "corp" }

const enterpriseUser = (provider: OidcProvider, subject: string, gateway: Parameters<typeof inGateway>[0]) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const upstream = gateway.loaded.config.auth.sso.upstream!
      const user = yield* (yield* UserRepo).findEnterprise(namespaceOf(upstream), subject)
      const memberships = Option.isSome(user) ? yield* (yield* MembershipRepo).forUser(user.value.id) : []
      return { user: Option.getOrUndefined(user), memberships, provider: provider.issuer }
    })
  )

describe("enterprise sign-in through an OpenID Provider", () => {
  it.scoped(
    "a first sign-in creates a pending user: access_denied with account_access_required, then enabled by an administrator it yields a code",
    () =>
      Effect.gen(function* () {
        const { port, provider } = yield* withProvider()
        provider.accounts.set("alice-sub", alice)
        const { gateway, logs } = yield* gatewayWithUpstream(port, provider)

        const first = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "alice-sub"))
        const denied = callbackParams(first.last)
        expect(denied.get("error")).toBe("access_denied")
        expect(denied.get("reason")).toBe("account_access_required")
        expect(denied.get("state")).toBe("client-state")
        expect(denied.get("iss")).toBe(gateway.issuer)
        // What the gateway sent the provider: code flow, PKCE S256, state, nonce, its fixed callback.
        const sent = provider.authorizations.at(-1)!
        expect(sent.get("code_challenge_method")).toBe("S256")
        expect(sent.get("nonce")?.length).toBeGreaterThan(20)
        expect(sent.get("state")?.length).toBeGreaterThan(20)
        expect(sent.get("redirect_uri")).toBe(`${gateway.baseUrl}/sso/callback`)

        const stored = yield* enterpriseUser(provider, "alice-sub", gateway)
        expect(stored.user).toMatchObject({ kind: "enterprise", status: "pending", display_name: "Alice Example" })
        expect(stored.memberships.map((row) => row.source)).toEqual(["claims", "claims", "claims"])
        expect(logs.events("auth.upstream_sign_in_refused")).toEqual([
          expect.objectContaining({ reason: "account_access_required", status: "pending", client_id: "cli" })
        ])
        expect(logs.events("identity.user_created")).toEqual([
          expect.objectContaining({ target_id: stored.user!.id, external_subject: "alice-sub", status: "pending" })
        ])
        // Nothing of the upstream's exchange is logged: no code, no token, no client secret.
        expect(logs.text()).not.toContain(provider.clientSecret)
        expect(logs.text()).not.toContain(first.callback!.searchParams.get("code")!)

        const token = yield* adminToken(gateway)
        const api = managementApi(gateway, token)
        const listed = yield* api.get("/api/v1/identities")
        const entry = (listed.body["users"] as Array<Record<string, unknown>>).find(
          (user) => user["id"] === stored.user!.id
        )!
        expect(
          (yield* api.put(`/api/v1/identities/${stored.user!.id}`, { enabled: true }, ifMatch(entry))).status
        ).toBe(200)

        const second = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "alice-sub"))
        const code = callbackParams(second.last).get("code")
        expect(code).toEqual(expect.any(String))
        const { body } = yield* Effect.promise(() =>
          exchange(gateway.baseUrl, {
            code: code!,
            verifier: second.verifier,
            redirectUri: "http://127.0.0.1:50000/callback",
            clientId: "cli",
            callback: new URLSearchParams()
          })
        )
        const claims = decodeJwt(String(body["access_token"]))
        // The gateway's own token: its subject is the internal id, nothing of the upstream's tokens.
        expect(claims.sub).toBe(stored.user!.id)
        expect(claims.iss).toBe(gateway.issuer)
        expect(JSON.stringify(body)).not.toContain("alice-sub")
        expect(body["id_token"]).toBeUndefined()
      }),
    60_000
  )

  it.scoped(
    "a subject in bootstrap_subjects is enabled in Administrators at its first creation only: a later disable holds",
    () =>
      Effect.gen(function* () {
        const { port, provider } = yield* withProvider("client_secret_post")
        provider.accounts.set("root-sub", { name: "Root", groups: [], departments: [] })
        const { gateway } = yield* gatewayWithUpstream(
          port,
          provider,
          { token_auth_method: "client_secret_post" },
          { bootstrap_subjects: ["root-sub"] }
        )
        const done = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "root-sub"))
        expect(callbackParams(done.last).get("code")).toEqual(expect.any(String))
        const stored = yield* enterpriseUser(provider, "root-sub", gateway)
        expect(stored.user?.status).toBe("enabled")
        expect(stored.memberships).toEqual([expect.objectContaining({ group_id: "administrators", source: "direct" })])

        // Disabled by an administrator: the next sign-in ends with account_access_required, and stays disabled.
        const api = managementApi(gateway, yield* adminToken(gateway))
        const listed = (yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
        const record = listed.find((user) => user["id"] === stored.user!.id)!
        expect(
          (yield* api.put(`/api/v1/identities/${stored.user!.id}`, { enabled: false }, ifMatch(record))).status
        ).toBe(200)
        const again = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "root-sub"))
        expect(callbackParams(again.last).get("reason")).toBe("account_access_required")
        expect((yield* enterpriseUser(provider, "root-sub", gateway)).user?.status).toBe("disabled")
      })
  )

  it.scoped(
    "a tenant mismatch and a group claim that is not an array of strings are refused, and logged with the reason",
    () =>
      Effect.gen(function* () {
        const { port, provider } = yield* withProvider()
        provider.accounts.set("other-tenant", { ...alice, tid: "someone-else" })
        provider.accounts.set("bad-groups", { ...alice, groups: "eng" })
        const { gateway, logs } = yield* gatewayWithUpstream(port, provider, {
          tenant_claim: "tid",
          tenant_value: "corp"
        })
        for (const [account, reason] of [
          ["other-tenant", "tenant_mismatch"],
          ["bad-groups", "groups_claim_invalid"]
        ] as const) {
          const done = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, account))
          const answer = callbackParams(done.last)
          expect(answer.get("error")).toBe("access_denied")
          expect(answer.get("reason")).toBeNull()
          expect(logs.events("auth.upstream_sign_in_refused").at(-1)).toMatchObject({ reason })
          expect((yield* enterpriseUser(provider, account, gateway)).user).toBeUndefined()
        }
      })
  )

  it.scoped("a replayed callback (state already answered) and a callback in another browser find no sign-in", () =>
    Effect.gen(function* () {
      const { port, provider } = yield* withProvider()
      provider.accounts.set("alice-sub", alice)
      const { gateway, logs } = yield* gatewayWithUpstream(port, provider, {}, { bootstrap_subjects: ["alice-sub"] })
      const done = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "alice-sub"))
      expect(callbackParams(done.last).get("code")).toEqual(expect.any(String))
      const replay = yield* Effect.promise(() => done.browser.get(done.callback!.toString()))
      expect(replay.status).toBe(400)
      expect(yield* Effect.promise(() => replay.text())).toContain("Sign-in expired")
      expect(logs.events("auth.upstream_sign_in_refused").at(-1)).toMatchObject({ reason: "state_unknown" })

      // A callback carried to another browser: refused, and that sign-in is over.
      const browser = new Browser(gateway.baseUrl)
      const { response } = yield* Effect.promise(() => beginCodeFlow(browser, "http://127.0.0.1:50000/callback"))
      const page = yield* Effect.promise(async () => (await browser.follow(response)).text())
      const toProvider = yield* Effect.promise(() => browser.get(upstreamLink(page)))
      provider.nextLogin = { accountId: "alice-sub" }
      const callback = yield* Effect.promise(() => provider.signIn(toProvider.headers.get("location")!))
      const elsewhere = yield* Effect.promise(() => new Browser(gateway.baseUrl).get(callback.toString()))
      expect(elsewhere.status).toBe(400)
      expect(logs.events("auth.upstream_sign_in_refused").at(-1)).toMatchObject({ reason: "browser_mismatch" })
      expect((yield* Effect.promise(() => browser.get(callback.toString()))).status).toBe(400)
    })
  )
})
