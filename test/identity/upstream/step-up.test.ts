/**
 * docs/enterprise-sign-in.md — step-up (for approvals) and identity namespaces: a step-up trip
 * forwards `acr_values`, `max_age` and `prompt=login` to a real OpenID Provider and keeps only the
 * verified `acr` and `auth_time`; the namespace changes with every setting that decides who a subject
 * is, and a subject in another namespace is another, pending person.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Redacted } from "effect"
import { connectionOf, namespaceOf } from "../../../src/identity/upstream/connection.js"
import { authorizationUrl, completeSignIn, discover, newAttempt } from "../../../src/identity/upstream/flow.js"
import { PolicyWrites } from "../../../src/policy/writes.js"
import { freePort } from "../../support/gateway-process.js"
import { inGateway, oauthGateway } from "../../support/oauth-gateway.js"
import { startOidcProvider } from "../../support/oidc-provider.js"

const upstream = {
  protocol: "oidc" as const,
  issuer: "https://login.example.com",
  client_id: "gateway",
  client_secret_env: "SECRET",
  token_auth_method: "client_secret_basic" as const,
  scopes: ["openid"],
  subject_claim: undefined,
  tenant_claim: "tid",
  tenant_value: "corp"
}

describe("step-up through the OpenID Provider", () => {
  it.scoped("forwards acr_values, max_age and prompt=login, and keeps the verified acr and auth_time", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const redirectUri = `http://127.0.0.1:${port}/sso/callback`
      const provider = yield* Effect.acquireRelease(
        Effect.promise(() => startOidcProvider({ redirectUri })),
        (started) => Effect.promise(() => started.close())
      )
      provider.accounts.set("approver", { name: "Ann" })
      const connection = connectionOf(
        {
          ...upstream,
          issuer: provider.issuer,
          client_id: provider.clientId,
          tenant_claim: undefined,
          tenant_value: undefined
        },
        Redacted.make(provider.clientSecret),
        provider.ca.caPem
      )
      const server = yield* discover(connection)
      const stepUp = { acrValues: ["urn:gateway:mfa"], maxAge: 60 }
      const attempt = newAttempt(connection.namespace, stepUp)
      const url = yield* Effect.promise(() => authorizationUrl(server, connection, attempt, redirectUri, stepUp))
      provider.nextLogin = { accountId: "approver", acr: "urn:gateway:mfa" }
      const callback = yield* Effect.promise(() => provider.signIn(url))
      const sent = provider.authorizations.at(-1)!
      expect([sent.get("acr_values"), sent.get("max_age"), sent.get("prompt")]).toEqual([
        "urn:gateway:mfa",
        "60",
        "login"
      ])
      const identity = yield* completeSignIn(server, connection, callback, attempt, redirectUri)
      expect(identity.subject).toBe("approver")
      expect(identity.acr).toBe("urn:gateway:mfa")
      expect(identity.authTime).toBeGreaterThan(Date.now() / 1000 - 60)

      // Without step-up nothing of it is sent, and no acr is claimed.
      const plain = newAttempt(connection.namespace, undefined)
      provider.nextLogin = { accountId: "approver" }
      const plainUrl = yield* Effect.promise(() => authorizationUrl(server, connection, plain, redirectUri, undefined))
      const back = yield* Effect.promise(() => provider.signIn(plainUrl))
      expect(provider.authorizations.at(-1)?.has("acr_values")).toBe(false)
      expect((yield* completeSignIn(server, connection, back, plain, redirectUri)).acr).not.toBe("urn:gateway:mfa")
    })
  )
})

describe("identity namespaces", () => {
  it("change with protocol, issuer, client id, subject claim and tenant, not with display claims", () => {
    const base = namespaceOf(upstream)
    for (const changed of [
      { protocol: "oauth2" as const },
      { issuer: "https://login.example.com/other" },
      { client_id: "gateway-2" },
      { subject_claim: "data.id" },
      { tenant_claim: "org" },
      { tenant_value: "other-corp" }
    ]) {
      expect([changed, namespaceOf({ ...upstream, ...changed })]).not.toEqual([changed, base])
    }
    expect(namespaceOf({ ...upstream, scopes: ["openid", "profile"], name_claim: "name" } as typeof upstream)).toBe(
      base
    )
  })

  it.scoped("the same subject in another namespace is another person, pending, with nothing of the first", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const admit = (namespace: string, bootstrap: boolean) =>
        inGateway(gateway)(
          Effect.gen(function* () {
            const at = new Date(yield* Clock.currentTimeMillis)
            return yield* (yield* PolicyWrites).admitEnterpriseUser(
              { namespace, subject: "same-sub", name: "Same", groups: [], departments: [], bootstrap },
              at
            )
          })
        )
      const first = yield* admit(namespaceOf(upstream), true)
      const other = yield* admit(namespaceOf({ ...upstream, tenant_value: "other-corp" }), false)
      expect(first.status).toBe("enabled")
      expect(other.id).not.toBe(first.id)
      expect(other.status).toBe("pending")
      // And the first is found again in its own namespace.
      expect((yield* admit(namespaceOf(upstream), false)).id).toBe(first.id)
    })
  )
})
