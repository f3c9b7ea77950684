/**
 * LDAP sign-in end to end (docs/ldap.md, "Enabling it"): an LDAP connection saved through the
 * Management API, people signing in on the `/sso` page's directory account form against a real
 * OpenLDAP server. The first sign-in creates a pending person (the client hears `access_denied`, reason
 * `account_access_required`); enabled, the next one yields a code and the gateway's own token; directory
 * groups become `claims` memberships; refusals are one `auth.ldap_sign_in_refused` line without the
 * password; replacing the connection ends the person's refresh tokens; and a draft connection can be
 * probed and tested without storing anything.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { decodeJwt } from "jose"
import { ldapNamespace } from "../../../src/identity/ldap/namespace.js"
import { adminToken, ifMatch, managementApi } from "../../support/admin-api.js"
import { type StoreKindUnderTest, storeKinds } from "../../support/databases.js"
import { LogCapture } from "../../support/logs.js"
import { Browser, beginCodeFlow, callbackParams, exchange, formFields, refresh } from "../../support/oauth-client.js"
import { type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"
import {
  BASE_DN,
  directorySettings,
  type LdapCertificates,
  makeLdapCertificates,
  type Slapd,
  startSlapd,
  USERS
} from "../../support/slapd.js"

let certificates: LdapCertificates
let slapd: Slapd
/** entryUUIDs as slapadd made them: people by uid, groups by cn. */
const uuids = new Map<string, string>()

beforeAll(async () => {
  certificates = makeLdapCertificates()
  slapd = await startSlapd(certificates, "verified")
  for (const entry of await slapd.search(BASE_DN, "(|(objectClass=inetOrgPerson)(objectClass=groupOfNames))", [
    "entryUUID",
    "uid",
    "cn"
  ])) {
    const key = typeof entry["uid"] === "string" ? entry["uid"] : entry["cn"]
    if (typeof key === "string") uuids.set(key, String(entry["entryUUID"]).toLowerCase())
  }
})

afterAll(async () => {
  await slapd?.stop()
  certificates?.remove()
})

const uuid = (key: string) => uuids.get(key) ?? expect.fail(`no entryUUID for ${key}`)
const providersPath = "/api/v1/identity-providers"
const redirectUri = "http://127.0.0.1:50000/callback"

/** The seeded directory over ldaps:// as the Management API takes it: settings and the bind password in clear. */
const ldapConnection = (changes: Record<string, unknown> = {}) => {
  const { bind_password, ...settings } = directorySettings(slapd.ldapsUrl!, certificates.caPem)
  return { enabled: true, ...settings, bind_password: Redacted.value(bind_password), ...changes }
}

/** The namespace the gateway must file these people under: the LDAP module's, for the saved settings. */
const namespaceOf = () => ldapNamespace(directorySettings(slapd.ldapsUrl!, certificates.caPem))

const gatewayWithLdap = (bootstrap: ReadonlyArray<string> = [], kind: StoreKindUnderTest = "sqlite") =>
  Effect.gen(function* () {
    const logs = new LogCapture()
    const gateway = yield* oauthGateway({
      kind,
      logs,
      auth: () => ({ sso: { bootstrap_subjects: [...bootstrap] } })
    })
    const api = managementApi(gateway, yield* adminToken(gateway))
    const saved = yield* api.put(
      providersPath,
      { oidc: { enabled: false }, ldap: ldapConnection() },
      { "if-match": '"0"' }
    )
    expect(saved.status).toBe(200)
    expect(saved.body["ldap"]).toMatchObject({ enabled: true, bind_password_configured: true })
    return { gateway, logs, api, saved }
  })

/**
 * A client's authorization (`cli`, state `client-state`, asking for `offline_access`) signed in on the
 * page's directory account form: the gateway's last answer, the page's HTML and the PKCE verifier.
 */
const signInWithDirectory = async (
  gateway: OAuthGateway,
  username: string,
  password: string,
  browser = new Browser(gateway.baseUrl)
) => {
  const { response, verifier } = await beginCodeFlow(browser, redirectUri, {
    state: "client-state",
    scope: "offline_access"
  })
  const html = await (await browser.follow(response)).text()
  const posted = await browser.post("/sso/login/ldap", {
    ...formFields(html, "/sso/login/ldap"),
    username,
    password
  })
  const last = await browser.follow(posted)
  return { last, html, verifier, browser }
}

const tokensFor = (gateway: OAuthGateway, last: Response, verifier: string) =>
  exchange(gateway.baseUrl, {
    code: callbackParams(last).get("code") ?? "",
    verifier,
    redirectUri,
    clientId: "cli",
    callback: new URLSearchParams()
  })

const usersOf = (api: ReturnType<typeof managementApi>) =>
  Effect.map(api.get("/api/v1/identities"), (answer) => ({
    users: answer.body["users"] as Array<Record<string, unknown>>,
    groups: answer.body["groups"] as Array<Record<string, unknown>>
  }))

describe.each(storeKinds)("LDAP sign-in on the /sso page (%s)", (kind) => {
  it.scoped(
    "a first sign-in creates a pending person (access_denied, account_access_required); enabled, the next yields a code for the internal id, with directory groups as claims memberships",
    () =>
      Effect.gen(function* () {
        const { gateway, logs, api } = yield* gatewayWithLdap([], kind)

        const first = yield* Effect.promise(() => signInWithDirectory(gateway, "alice", USERS.alice.password))
        // The page offers the directory account beside the local one, and no second factor follows.
        expect(first.html).toContain("Directory account")
        expect(first.html).toContain("Sign in with your directory account")
        expect(first.html).toContain('action="/sso/login/local"')
        const denied = callbackParams(first.last)
        expect(denied.get("error")).toBe("access_denied")
        expect(denied.get("reason")).toBe("account_access_required")
        expect(denied.get("state")).toBe("client-state")
        expect(denied.get("iss")).toBe(gateway.issuer)

        const { users, groups } = yield* usersOf(api)
        const alice = users.find((user) => user["external_subject"] === uuid("alice"))!
        expect(alice).toMatchObject({
          kind: "enterprise",
          status: "pending",
          display_name: "Alice Liddell",
          namespace: namespaceOf()
        })
        // Directory groups are organization groups of the connection's namespace, by their entryUUID.
        const organization = groups.filter((group) => group["provider"] === namespaceOf())
        expect(organization.map((group) => [group["external_id"], group["name"], group["kind"]]).sort()).toEqual(
          [
            [uuid("engineering"), "engineering", "group"],
            [uuid("operators"), "operators", "group"]
          ].sort()
        )
        expect(
          (alice["groups"] as Array<Record<string, unknown>>).map((group) => [group["name"], group["source"]]).sort()
        ).toEqual([
          ["engineering", "claims"],
          ["operators", "claims"]
        ])
        expect(logs.events("auth.ldap_sign_in_refused")).toEqual([
          expect.objectContaining({
            reason: "account_access_required",
            status: "pending",
            user_id: alice["id"],
            provider: namespaceOf(),
            client_id: "cli"
          })
        ])
        expect(logs.events("identity.user_created")).toEqual([
          expect.objectContaining({ target_id: alice["id"], external_subject: uuid("alice"), status: "pending" })
        ])

        const enabled = yield* api.put(`/api/v1/identities/${alice["id"]}`, { enabled: true }, ifMatch(alice))
        expect(enabled.status).toBe(200)
        const second = yield* Effect.promise(() => signInWithDirectory(gateway, "alice", USERS.alice.password))
        expect(callbackParams(second.last).get("code")).toEqual(expect.any(String))
        const { response, body } = yield* Effect.promise(() => tokensFor(gateway, second.last, second.verifier))
        expect(response.status).toBe(200)
        // The gateway's own token: its subject is the internal id, never the directory's.
        const claims = decodeJwt(String(body["access_token"]))
        expect(claims.sub).toBe(alice["id"])
        expect(JSON.stringify(body)).not.toContain(uuid("alice"))
        // Nothing of the password anywhere in the log.
        expect(logs.text()).not.toContain(USERS.alice.password)
      }),
    60_000
  )
})

describe("LDAP sign-in on the /sso page", () => {
  it.scoped(
    "a wrong password or an unknown name: the same page, 401, one refusal line without the password or the name; then 429",
    () =>
      Effect.gen(function* () {
        const { gateway, logs, api } = yield* gatewayWithLdap()
        const wrong = yield* Effect.promise(() => signInWithDirectory(gateway, "alice", "not-alices-password-42"))
        expect(wrong.last.status).toBe(401)
        const page = yield* Effect.promise(() => wrong.last.text())
        expect(page).toContain("Wrong user name or password.")
        expect(page).toContain('action="/sso/login/ldap"')
        expect(logs.events("auth.ldap_sign_in_refused")).toEqual([
          expect.objectContaining({
            reason: "invalid_credentials",
            provider: namespaceOf(),
            client_address: "127.0.0.1",
            client_id: "cli"
          })
        ])
        const unknown = yield* Effect.promise(() =>
          signInWithDirectory(gateway, "nobody-by-this-name", "some-password-1")
        )
        expect(unknown.last.status).toBe(401)
        expect(yield* Effect.promise(() => unknown.last.text())).toContain("Wrong user name or password.")
        expect(logs.events("auth.ldap_sign_in_refused").at(-1)).toMatchObject({ reason: "no_such_user" })
        expect(logs.text()).not.toContain("not-alices-password-42")
        expect(logs.text()).not.toContain("nobody-by-this-name")
        expect(logs.text()).not.toContain("some-password-1")
        // A refusal creates nobody.
        expect((yield* usersOf(api)).users.filter((user) => user["kind"] === "enterprise")).toEqual([])

        // The local sign-in's windows: 5 failures for a name at an address, then 429 without asking.
        for (let attempt = 2; attempt <= 5; attempt++) {
          const again = yield* Effect.promise(() => signInWithDirectory(gateway, "alice", "not-alices-password-42"))
          expect(again.last.status).toBe(401)
        }
        const throttled = yield* Effect.promise(() => signInWithDirectory(gateway, "alice", USERS.alice.password))
        expect(throttled.last.status).toBe(429)
        expect(Number(throttled.last.headers.get("retry-after"))).toBeGreaterThan(0)
        expect(logs.events("auth.ldap_sign_in_refused").at(-1)).toMatchObject({
          reason: "throttled",
          window: "account_at_address"
        })
        expect(logs.events("auth.lockout_started")).toEqual([
          expect.objectContaining({ stage: "ldap", window: "account_at_address" })
        ])
      }),
    60_000
  )

  it.scoped(
    "bootstrap_subjects do not apply: they name subjects of the configuration file's provider, and LDAP is only ever stored through the API",
    () =>
      Effect.gen(function* () {
        const { gateway, api } = yield* gatewayWithLdap([uuid("bob")])
        const done = yield* Effect.promise(() => signInWithDirectory(gateway, "bob", USERS.bob.password))
        expect(callbackParams(done.last).get("reason")).toBe("account_access_required")
        const bob = (yield* usersOf(api)).users.find((user) => user["external_subject"] === uuid("bob"))!
        expect(bob["status"]).toBe("pending")
        expect(bob["groups"]).not.toEqual(expect.arrayContaining([expect.objectContaining({ id: "administrators" })]))
      })
  )

  it.scoped(
    "replacing the LDAP connection revokes its people's refresh tokens; without a connection there is no form",
    () =>
      Effect.gen(function* () {
        const { gateway, logs, api, saved } = yield* gatewayWithLdap()
        yield* Effect.promise(() => signInWithDirectory(gateway, "bob", USERS.bob.password))
        const bob = (yield* usersOf(api)).users.find((user) => user["external_subject"] === uuid("bob"))!
        expect((yield* api.put(`/api/v1/identities/${bob["id"]}`, { enabled: true }, ifMatch(bob))).status).toBe(200)
        const done = yield* Effect.promise(() => signInWithDirectory(gateway, "bob", USERS.bob.password))
        const tokens = yield* Effect.promise(() => tokensFor(gateway, done.last, done.verifier))
        expect(tokens.response.status).toBe(200)
        const refreshed = yield* Effect.promise(() => refresh(gateway.baseUrl, String(tokens.body["refresh_token"])))
        expect(refreshed.response.status).toBe(200)

        // Another display-name attribute: not a new namespace, but still a replaced connection.
        const replaced = yield* api.put(
          providersPath,
          { oidc: { enabled: false }, ldap: ldapConnection({ user_name_attribute: "cn", bind_password: undefined }) },
          ifMatch(saved.body)
        )
        expect(replaced.status).toBe(200)
        const after = yield* Effect.promise(() => refresh(gateway.baseUrl, String(refreshed.body["refresh_token"])))
        expect(after.body["error"]).toBe("invalid_grant")
        expect(logs.events("identity.providers_updated").at(-1)).toMatchObject({
          replaced: ["ldap"],
          revoked: [expect.objectContaining({ connection: "ldap", users: 1 })]
        })

        // Disabled: the page offers no directory account, and its form's address is gone.
        const disabled = yield* api.put(
          providersPath,
          { oidc: { enabled: false }, ldap: { ...ldapConnection({ enabled: false }), bind_password: undefined } },
          ifMatch(replaced.body)
        )
        expect(disabled.status).toBe(200)
        const browser = new Browser(gateway.baseUrl)
        const { response } = yield* Effect.promise(() => beginCodeFlow(browser, redirectUri))
        const html = yield* Effect.promise(async () => (await browser.follow(response)).text())
        expect(html).not.toContain("Directory account")
        const posted = yield* Effect.promise(() =>
          browser.post("/sso/login/ldap", { ...formFields(html, "/sso/login/local"), username: "bob", password: "x" })
        )
        expect(posted.status).toBe(404)
        expect((yield* Effect.promise(() => browser.get("/sso/login/ldap"))).status).toBe(405)
      }),
    60_000
  )
})

describe("trying a draft LDAP connection (probe and test)", () => {
  it.scoped("probe connects and binds as the service account; test signs a person in; nothing is stored", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const api = managementApi(gateway, yield* adminToken(gateway))
      const probe = (ldap: Record<string, unknown>) => api.post(`${providersPath}/probe`, { source: "ldap", ldap })

      expect((yield* probe(ldapConnection())).body).toEqual({ source: "ldap", reachable: true })
      expect((yield* probe(ldapConnection({ bind_password: "not-the-service-password" }))).body).toMatchObject({
        source: "ldap",
        reachable: false,
        reason: "service_bind_failed"
      })
      expect((yield* probe(ldapConnection({ ca_pem: certificates.otherCaPem }))).body).toMatchObject({
        reachable: false,
        reason: "tls_failed"
      })
      // Drafts are checked like saved settings, and a draft without a password needs a stored one.
      const malformed = yield* probe(ldapConnection({ user_search_filter: "(uid=alice)" }))
      expect(malformed.status).toBe(400)
      expect(String(malformed.body["error_description"])).toContain(
        "ldap.user_search_filter: must contain {{username}} exactly once"
      )
      const noPassword = yield* probe(ldapConnection({ bind_password: undefined }))
      expect(noPassword.status).toBe(400)
      expect(String(noPassword.body["error_description"])).toContain("ldap.bind_password: required")
      expect((yield* api.post(`${providersPath}/probe`, { source: "ldap" })).status).toBe(400)

      const test = (username: string, password: string) =>
        api.post(`${providersPath}/test`, { source: "ldap", ldap: ldapConnection(), username, password })
      const succeeded = yield* test("alice", USERS.alice.password)
      expect(succeeded.status).toBe(200)
      expect(succeeded.body).toMatchObject({
        source: "ldap",
        status: "succeeded",
        identity: { subject: uuid("alice"), name: "Alice Liddell", departments: [], acr: null, auth_time: null }
      })
      expect([...((succeeded.body["identity"] as Record<string, unknown>)["groups"] as Array<string>)].sort()).toEqual([
        "engineering",
        "operators"
      ])
      expect((yield* test("alice", "not-alices-password-42")).body).toMatchObject({
        source: "ldap",
        status: "failed",
        reason: "invalid_credentials"
      })
      expect((yield* api.post(`${providersPath}/test`, { source: "ldap", ldap: ldapConnection() })).status).toBe(400)

      // Nothing saved, nobody created.
      expect((yield* api.get(providersPath)).body["revision"]).toBe("0")
      expect((yield* usersOf(api)).users.filter((user) => user["kind"] === "enterprise")).toEqual([])

      // Once a connection is stored, a draft without bind_password uses its password.
      const saved = yield* api.put(
        providersPath,
        { oidc: { enabled: false }, ldap: ldapConnection({ enabled: false }) },
        { "if-match": '"0"' }
      )
      expect(saved.status).toBe(200)
      expect((yield* probe(ldapConnection({ bind_password: undefined }))).body).toEqual({
        source: "ldap",
        reachable: true
      })
    })
  )

  it.scoped(
    "test is limited per administrator: past 5 refused for one name, or 20 over all names, a test is 429 and never reaches the directory",
    () =>
      Effect.gen(function* () {
        const logs = new LogCapture()
        const gateway = yield* oauthGateway({ logs })
        const api = managementApi(gateway, yield* adminToken(gateway))
        const test = (username: string, password: string, ldap = ldapConnection()) =>
          api.post(`${providersPath}/test`, { source: "ldap", ldap, username, password })

        // A connection that fails before any password is checked counts for nothing.
        for (let n = 0; n < 6; n++) {
          expect(
            (yield* test("alice", "guess", ldapConnection({ ca_pem: certificates.otherCaPem }))).body
          ).toMatchObject({
            reason: "tls_failed"
          })
        }
        // A right password takes its count back.
        for (let n = 0; n < 6; n++) expect((yield* test("bob", USERS.bob.password)).body["status"]).toBe("succeeded")
        // Five refused passwords for one name (however it is spelled), then refused without asking.
        for (const name of ["alice", "Alice", "ALICE", " alice", "alice"]) {
          expect((yield* test(name, "not-alices-password-42")).body["reason"]).toBe("invalid_credentials")
        }
        const throttled = yield* test("alice", USERS.alice.password)
        expect(throttled.status).toBe(429)
        expect(throttled.body["error"]).toBe("too_many_requests")
        expect(String(throttled.body["error_description"])).toMatch(/try again in \d+ seconds/)
        // The same wait as Retry-After (RFC 9110 §10.2.3), and the error body's usual headers.
        const wait = /try again in (\d+) seconds/.exec(String(throttled.body["error_description"]))?.[1]
        expect(Number(wait)).toBeGreaterThan(0)
        expect(throttled.headers.get("retry-after")).toBe(wait)
        expect(throttled.headers.get("cache-control")).toBe("no-store")
        expect(typeof throttled.body["request_id"]).toBe("string")
        expect(String(throttled.body["error_description"])).not.toContain(USERS.alice.password)
        expect(logs.events("identity_provider.test_throttled")).toHaveLength(1)
        // Another name is the administrator's other 15 of 20.
        expect((yield* test("bob", "not-bobs-password-42")).body["reason"]).toBe("invalid_credentials")
        expect((yield* test("bob", USERS.bob.password)).body["status"]).toBe("succeeded")
        // Names the directory does not know count too, towards the 20 over all names (6 so far).
        for (let n = 0; n < 14; n++) expect((yield* test(`nobody-${n}`, "guess")).body["reason"]).toBe("no_such_user")
        expect((yield* test("bob", USERS.bob.password)).status).toBe(429)
        expect(logs.events("identity_provider.test_throttled")).toHaveLength(2)
      })
  )
})
