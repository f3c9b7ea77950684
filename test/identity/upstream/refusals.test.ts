/**
 * docs/enterprise-sign-in.md, "Refusals" — ID tokens no certified provider would mint (a scripted
 * provider signs them: test/support/scripted-upstream.ts): wrong audience, issuer, nonce, expired,
 * `alg: none`, a foreign signature; discovery without S256. Each ends the sign-in with `access_denied`
 * at the client, creates nobody, and writes one `auth.upstream_sign_in_refused` line naming the check.
 * And the OAuth2 UserInfo adapter: subject, name and tenant by dot path, failure envelopes refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { JWTPayload } from "jose"
import { Agent, fetch } from "undici"
import { namespaceOf } from "../../../src/identity/upstream/connection.js"
import { UserRepo } from "../../../src/store/users.js"
import { adminToken, ifMatch, managementApi } from "../../support/admin-api.js"
import { UPSTREAM_SECRET_ENV, upstreamLink } from "../../support/enterprise-sign-in.js"
import { freePort } from "../../support/gateway-process.js"
import { LogCapture } from "../../support/logs.js"
import { Browser, beginCodeFlow, callbackParams } from "../../support/oauth-client.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"
import { type ScriptedUpstream, startScriptedUpstream } from "../../support/scripted-upstream.js"

const scripted = (options: { readonly s256?: boolean } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() => startScriptedUpstream(options)),
    (upstream) => Effect.promise(() => upstream.close())
  )

const gatewayFor = (upstream: ScriptedUpstream, settings: Record<string, unknown>) =>
  Effect.gen(function* () {
    const logs = new LogCapture()
    const gateway = yield* oauthGateway({
      port: yield* Effect.promise(freePort),
      logs,
      env: { [UPSTREAM_SECRET_ENV]: upstream.clientSecret },
      auth: () => ({
        sso: {
          upstream: {
            issuer: upstream.issuer,
            client_id: "gateway",
            client_secret_env: UPSTREAM_SECRET_ENV,
            ca_file: upstream.ca.caFile,
            ...settings
          }
        }
      })
    })
    return { gateway, logs }
  })

/** Through the gateway to the scripted provider (which answers at once) and back: the gateway's last answer. */
const signIn = (gateway: OAuthGateway, upstream: ScriptedUpstream) =>
  Effect.promise(async () => {
    const browser = new Browser(gateway.baseUrl)
    const { response } = await beginCodeFlow(browser, "http://127.0.0.1:50000/callback", { state: "client-state" })
    const page = await browser.follow(response)
    const toProvider = await browser.get(upstreamLink(await page.text()))
    if (toProvider.status !== 303) return toProvider
    const atProvider = await fetchThrough(toProvider.headers.get("location")!, upstream.ca.caPem)
    return browser.follow(await browser.get(atProvider))
  })

/** The scripted provider's /authorize redirects straight back; read where to (without trusting its CA globally). */
const fetchThrough = async (authorizeUrl: string, ca: string) => {
  const agent = new Agent({ connect: { ca } })
  try {
    const answer = await fetch(authorizeUrl, { redirect: "manual", dispatcher: agent })
    return answer.headers.get("location") ?? ""
  } finally {
    await agent.close()
  }
}

const usersIn = (gateway: OAuthGateway) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const namespace = namespaceOf(gateway.loaded.config.auth.sso.upstream!)
      return (yield* (yield* UserRepo).page("", 100)).filter((user) => user.namespace === namespace)
    })
  )

describe("refused ID tokens", () => {
  const cases: ReadonlyArray<
    readonly [string, (claims: JWTPayload) => ReturnType<ScriptedUpstream["idToken"]>, string]
  > = [
    ["a wrong audience", (claims) => ({ claims: { ...claims, aud: "someone-else" }, sign: "valid" }), "audience"],
    ["a wrong issuer", (claims) => ({ claims: { ...claims, iss: "https://evil.example" }, sign: "valid" }), "issuer"],
    ["a wrong nonce", (claims) => ({ claims: { ...claims, nonce: "replayed" }, sign: "valid" }), "nonce"],
    ["an expired token", (claims) => ({ claims: { ...claims, iat: 1_000, exp: 2_000 }, sign: "valid" }), "expiry"],
    ["alg: none", (claims) => ({ claims, sign: "none" }), "algorithm"],
    ["a signature by another key", (claims) => ({ claims, sign: "foreign_key" }), "signature"]
  ]
  for (const [what, forge, check] of cases) {
    it.scoped(`${what}: access_denied at the client, nobody created, logged with check "${check}"`, () =>
      Effect.gen(function* () {
        const upstream = yield* scripted()
        upstream.idToken = forge
        const { gateway, logs } = yield* gatewayFor(upstream, { protocol: "oidc" })
        const last = yield* signIn(gateway, upstream)
        const answer = callbackParams(last)
        expect(answer.get("error")).toBe("access_denied")
        expect(answer.get("state")).toBe("client-state")
        expect(answer.get("code")).toBeNull()
        expect(logs.events("auth.upstream_sign_in_refused")).toEqual([
          expect.objectContaining({ reason: "id_token_invalid", check, client_id: "cli" })
        ])
        expect(logs.text()).not.toContain("upstream-access-token")
        expect(yield* usersIn(gateway)).toEqual([])
      })
    )
  }

  it.scoped("discovery without S256: the sign-in page says the provider cannot be used, nothing is sent there", () =>
    Effect.gen(function* () {
      const upstream = yield* scripted({ s256: false })
      const { gateway, logs } = yield* gatewayFor(upstream, { protocol: "oidc" })
      const last = yield* signIn(gateway, upstream)
      expect(last.status).toBe(502)
      expect(logs.events("auth.upstream_sign_in_refused")).toEqual([
        expect.objectContaining({ reason: "discovery_without_s256" })
      ])
      expect(upstream.tokenRequests).toEqual([])
    })
  )
})

describe("OAuth2 UserInfo upstream", () => {
  const oauth2 = (upstream: ScriptedUpstream) => ({
    protocol: "oauth2",
    authorization_url: `${upstream.issuer}/authorize`,
    token_url: `${upstream.issuer}/token`,
    userinfo_url: `${upstream.issuer}/userinfo`,
    scopes: ["profile"],
    token_auth_method: "client_secret_post",
    subject_claim: "data.user.id",
    name_claim: "data.user.name",
    tenant_claim: "data.org",
    tenant_value: "corp",
    success_claim: "code",
    success_value: "0"
  })

  it.scoped("subject, name and tenant by dot path; the person arrives pending; the secret is sent in the form", () =>
    Effect.gen(function* () {
      const upstream = yield* scripted()
      upstream.withIdToken = false
      upstream.userInfo = { status: 200, body: { code: "0", data: { org: "corp", user: { id: 4711, name: "Bob" } } } }
      const { gateway } = yield* gatewayFor(upstream, oauth2(upstream))
      const answer = callbackParams(yield* signIn(gateway, upstream))
      expect(answer.get("reason")).toBe("account_access_required")
      expect(yield* usersIn(gateway)).toEqual([
        expect.objectContaining({ external_subject: "4711", display_name: "Bob", status: "pending" })
      ])
      expect(upstream.tokenRequests[0]?.form.get("client_secret")).toBe(upstream.clientSecret)
      expect(upstream.tokenRequests[0]?.authorization).toBeUndefined()
      expect(upstream.tokenRequests[0]?.form.get("code_verifier")?.length).toBeGreaterThan(40)
    })
  )

  for (const [what, body, reason] of [
    [
      "a failure code inside an HTTP 200 envelope",
      { code: "1", data: { org: "corp", user: { id: "u1" } } },
      "success_claim_mismatch"
    ],
    ["an empty subject", { code: "0", data: { org: "corp", user: { id: "  " } } }, "subject_missing"],
    ["a subject that is an object", { code: "0", data: { org: "corp", user: { id: { x: 1 } } } }, "subject_missing"],
    // A control character is in no usable subject or name (U+0000 would reach PostgreSQL as a 500).
    ["a subject holding U+0000", { code: "0", data: { org: "corp", user: { id: "u\u00001" } } }, "subject_missing"],
    [
      "a name holding a line break",
      { code: "0", data: { org: "corp", user: { id: "u1", name: "Alice\r\nAdmin: yes" } } },
      "name_claim_invalid"
    ],
    ["another tenant", { code: "0", data: { org: "other", user: { id: "u1" } } }, "tenant_mismatch"]
  ] as const) {
    it.scoped(`${what} is refused (${reason})`, () =>
      Effect.gen(function* () {
        const upstream = yield* scripted()
        upstream.withIdToken = false
        upstream.userInfo = { status: 200, body }
        const { gateway, logs } = yield* gatewayFor(upstream, oauth2(upstream))
        expect(callbackParams(yield* signIn(gateway, upstream)).get("error")).toBe("access_denied")
        expect(logs.events("auth.upstream_sign_in_refused")).toEqual([expect.objectContaining({ reason })])
        expect(yield* usersIn(gateway)).toEqual([])
      })
    )
  }
})

describe("a connection replaced during a sign-in", () => {
  it.scoped(
    "a sign-in whose stored connection is disabled while the provider answers does not complete",
    () =>
      Effect.gen(function* () {
        const upstream = yield* scripted()
        const logs = new LogCapture()
        const gateway = yield* oauthGateway({ logs })
        const api = managementApi(gateway, yield* adminToken(gateway))
        const connection = {
          enabled: true,
          issuer: upstream.issuer,
          client_id: "gateway",
          client_secret: upstream.clientSecret,
          ca_pem: upstream.ca.caPem
        }
        const saved = yield* api.put(
          "/api/v1/identity-providers",
          { oidc: connection, ldap: { enabled: false } },
          { "if-match": '"0"' }
        )
        expect(saved.status).toBe(200)
        upstream.tokenDelayMs = 1_500
        const browser = new Browser(gateway.baseUrl)
        const { response } = yield* Effect.promise(() =>
          beginCodeFlow(browser, "http://127.0.0.1:50000/callback", { state: "client-state" })
        )
        const page = yield* Effect.promise(async () => (await browser.follow(response)).text())
        const toProvider = yield* Effect.promise(() => browser.get(upstreamLink(page)))
        const callback = yield* Effect.promise(() =>
          fetchThrough(toProvider.headers.get("location")!, upstream.ca.caPem)
        )
        // The browser comes back; while the provider takes its time to answer the code, the connection is disabled.
        const answered = Effect.promise(() => browser.get(callback))
        const [last] = yield* Effect.all(
          [
            answered,
            // On the live clock (the test runs on a TestClock): half a second into the provider's wait.
            Effect.zipRight(
              Effect.promise(() => new Promise((done) => setTimeout(done, 500))),
              api.put(
                "/api/v1/identity-providers",
                { oidc: { ...connection, enabled: false }, ldap: { enabled: false } },
                ifMatch(saved.body)
              )
            )
          ],
          { concurrency: "unbounded" }
        )
        expect(last.status).toBe(400)
        expect(last.headers.get("location")).toBeNull()
        expect(logs.events("auth.upstream_sign_in_refused")).toEqual([
          expect.objectContaining({ reason: "connection_replaced" })
        ])
        const enterprise = yield* inGateway(gateway)(
          Effect.map(
            Effect.flatMap(UserRepo, (users) => users.page("", 100)),
            (rows) => rows.filter((user) => user.kind === "enterprise")
          )
        )
        expect(enterprise).toEqual([])
      }),
    30_000
  )
})
