/**
 * docs/enterprise-sign-in.md, "Identity-provider settings" — `GET`/`PUT /api/v1/identity-providers`:
 * revision "0" before the first save, `If-Match`, precise 400s, secrets write-only (sealed at rest,
 * never read back), exactly one of two racing saves wins on both stores, a configuration-file upstream
 * keeps the OIDC connection; and a stored OIDC connection signs people in at once, and replacing it
 * revokes their sessions and browser sign-ins.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { addLocalUser, adminToken, ifMatch, managementApi, signInForAdminToken } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { providerForPort, signInThroughUpstream } from "../support/enterprise-sign-in.js"
import { freePort } from "../support/gateway-process.js"
import { LogCapture } from "../support/logs.js"
import { callbackParams, exchange, refresh } from "../support/oauth-client.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const path = "/api/v1/identity-providers"
const oidcOff = { enabled: false }
const ldapOff = { enabled: false }

describe.each(storeKinds)("Management API: identity providers (%s)", (kind) => {
  it.scoped("starts at revision 0; secrets are write-only and sealed; saves need the current If-Match", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway))
      const initial = yield* api.get(path)
      expect(initial.status).toBe(200)
      expect(initial.body).toMatchObject({
        revision: "0",
        updated_at: null,
        oidc: { enabled: false, client_secret_configured: false },
        ldap: { enabled: false, bind_password_configured: false }
      })

      const body = {
        oidc: {
          enabled: true,
          issuer: "https://login.example.com",
          client_id: "gateway",
          client_secret: "very-secret-value-0123456789",
          groups_claim: "groups"
        },
        ldap: { enabled: false, url: "ldaps://ldap.example.com:636", bind_password: "bind-secret-0123456789" }
      }
      expect((yield* api.put(path, body)).status).toBe(428)
      const saved = yield* api.put(path, body, { "if-match": '"0"' })
      expect(saved.status).toBe(200)
      expect(saved.body).toMatchObject({
        revision: "1",
        oidc: {
          enabled: true,
          issuer: "https://login.example.com",
          client_secret_configured: true,
          scopes: ["openid"]
        },
        ldap: { enabled: false, bind_password_configured: true }
      })
      const text = JSON.stringify((yield* api.get(path)).body)
      expect(text).not.toContain("very-secret-value")
      expect(text).not.toContain("bind-secret")
      const stored = yield* inGateway(gateway)(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM identity_providers`)
      )
      expect(JSON.stringify(stored)).not.toContain("very-secret-value")
      expect(String(stored[0]?.["oidc_client_secret_sealed"])).toMatch(/^v1\./)

      // Omitted keeps the secret (while its destination is unchanged: test/admin/secret-destinations.test.ts);
      // an empty string clears it (then an enabled OIDC connection is refused).
      const ldapKept = { ...body.ldap, bind_password: undefined }
      const kept = yield* api.put(
        path,
        { oidc: { ...body.oidc, client_secret: undefined }, ldap: ldapKept },
        ifMatch(saved.body)
      )
      expect(kept.body).toMatchObject({ revision: "2", oidc: { client_secret_configured: true } })
      const cleared = yield* api.put(
        path,
        { oidc: { ...body.oidc, client_secret: "" }, ldap: ldapKept },
        ifMatch(kept.body)
      )
      expect(cleared.status).toBe(400)
      expect(cleared.body["error_description"]).toContain("oidc.client_secret: required when oidc.enabled is true")
      expect((yield* api.put(path, { oidc: oidcOff, ldap: ldapOff }, ifMatch(saved.body))).status).toBe(412)
    })
  )

  it.scoped("refuses bad input precisely and writes nothing", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway))
      const zero = { "if-match": '"0"' }
      for (const [body, message] of [
        [{ oidc: oidcOff }, "ldap"],
        [{ oidc: { ...oidcOff, surprise: 1 }, ldap: ldapOff }, "surprise"],
        [{ oidc: { enabled: "yes" }, ldap: ldapOff }, "oidc.enabled"],
        [{ oidc: { enabled: false, issuer: "http://login.example.com" }, ldap: ldapOff }, "must be an https URL"],
        [
          { oidc: { enabled: false, issuer: "https://user:pw@login.example.com" }, ldap: ldapOff },
          "must not carry credentials"
        ],
        [{ oidc: { enabled: true }, ldap: ldapOff }, "oidc.issuer: required when oidc.enabled is true"],
        [{ oidc: { enabled: false, tenant_claim: "tid" }, ldap: ldapOff }, "both or neither"],
        [{ oidc: oidcOff, ldap: { enabled: false, ca_pem: "not a certificate" } }, "PEM"],
        [{ oidc: oidcOff, ldap: { enabled: false, group_search_base: "ou=groups" } }, "all four or none"],
        [{ oidc: oidcOff, ldap: { enabled: true } }, "ldap.url: required"],
        // What a draft gives must be well-formed: the LDAP module's own rules (docs/ldap.md, "Settings").
        [
          { oidc: oidcOff, ldap: { enabled: false, url: "https://ldap.example.com" } },
          "ldap.url: must start with ldaps://"
        ],
        [
          { oidc: oidcOff, ldap: { enabled: false, url: "ldaps://ldap.example.com/dc=example" } },
          "ldap.url: must not have a path"
        ],
        [
          { oidc: oidcOff, ldap: { enabled: false, user_search_filter: "(uid={{username}})(cn={{username}})" } },
          "ldap.user_search_filter: must contain {{username}} exactly once"
        ],
        [
          { oidc: oidcOff, ldap: { enabled: false, user_search_filter: "({{username}}=alice)" } },
          "ldap.user_search_filter: placeholders must stand for values"
        ],
        [
          { oidc: oidcOff, ldap: { enabled: false, user_id_attribute: "entry UUID" } },
          "ldap.user_id_attribute: must be one attribute name"
        ],
        [
          {
            oidc: oidcOff,
            ldap: {
              enabled: false,
              group_search_base: "ou=groups,dc=example,dc=com",
              group_search_filter: "(objectClass=groupOfNames)",
              group_id_attribute: "entryUUID",
              group_name_attribute: "cn"
            }
          },
          "ldap.group_search_filter: must contain {{dn}} or {{username}}"
        ],
        [
          {
            oidc: oidcOff,
            ldap: {
              enabled: true,
              url: "ldaps://ldap.example.com",
              bind_dn: "cn=gateway,dc=example,dc=com",
              bind_password: "bind-secret-0123456789",
              user_search_base: "ou=people,dc=example,dc=com",
              user_search_filter: "(uid={{user}})",
              user_id_attribute: "entryUUID",
              user_name_attribute: "displayName"
            }
          },
          "ldap.user_search_filter: {{user}} is not a placeholder"
        ]
      ] as const) {
        const answer = yield* api.put(path, body, zero)
        expect([message, answer.status, answer.body["error"]]).toEqual([message, 400, "invalid_request"])
        expect(String(answer.body["error_description"])).toContain(message)
      }
      expect((yield* api.put(path, "{not json", zero)).status).toBe(400)
      expect((yield* api.get(path)).body["revision"]).toBe("0")
    })
  )

  it.scoped("two saves at the same revision: exactly one wins, the other gets 412", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway))
      const answers = yield* Effect.all(
        [1, 2, 3, 4].map((n) =>
          api.put(path, { oidc: { enabled: false, client_id: `c${n}` }, ldap: ldapOff }, { "if-match": '"0"' })
        ),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412, 412, 412])
      expect((yield* api.get(path)).body["revision"]).toBe("1")
    })
  )
})

describe("a stored OIDC connection", () => {
  it.scoped("is refused when the configuration file sets auth.sso.upstream (409 managed_in_configuration)", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({
        env: { SECRET: "x" },
        auth: () => ({
          sso: {
            upstream: {
              protocol: "oidc",
              issuer: "https://login.example.com",
              client_id: "g",
              client_secret_env: "SECRET"
            }
          }
        })
      })
      const api = managementApi(gateway, yield* adminToken(gateway))
      const answer = yield* api.put(
        path,
        {
          oidc: { enabled: true, issuer: "https://other.example.com", client_id: "g", client_secret: "s" },
          ldap: ldapOff
        },
        { "if-match": '"0"' }
      )
      expect(answer.status).toBe(409)
      expect(answer.body["error"]).toBe("managed_in_configuration")
    })
  )

  it.scoped(
    "signs people in at once (bootstrap_subjects do not apply to it); replacing it revokes their sessions, refresh tokens and browser sign-ins",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        const provider = yield* providerForPort(port)
        provider.accounts.set("root-sub", { name: "Root", groups: ["ops"] })
        const logs = new LogCapture()
        const gateway = yield* oauthGateway({ port, logs, auth: () => ({ sso: { bootstrap_subjects: ["root-sub"] } }) })
        const api = managementApi(gateway, yield* adminToken(gateway))
        const connection = {
          enabled: true,
          issuer: provider.issuer,
          client_id: provider.clientId,
          client_secret: provider.clientSecret,
          scopes: ["openid", "profile", "corp"],
          name_claim: "name",
          groups_claim: "groups",
          ca_pem: provider.ca.caPem
        }
        const saved = yield* api.put(path, { oidc: connection, ldap: ldapOff }, { "if-match": '"0"' })
        expect(saved.status).toBe(200)

        // bootstrap_subjects name subjects of the configuration file's provider only: here, pending.
        const first = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "root-sub"))
        expect(callbackParams(first.last).get("reason")).toBe("account_access_required")
        const listed = (yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
        const person = listed.find((user) => user["external_subject"] === "root-sub")!
        expect(person["status"]).toBe("pending")
        expect((yield* api.put(`/api/v1/identities/${person["id"]}`, { enabled: true }, ifMatch(person))).status).toBe(
          200
        )

        const done = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "root-sub"))
        const code = callbackParams(done.last).get("code")!
        const tokens = yield* Effect.promise(() =>
          exchange(
            gateway.baseUrl,
            {
              code,
              verifier: done.verifier,
              redirectUri: "http://127.0.0.1:50000/callback",
              clientId: "cli",
              callback: new URLSearchParams()
            },
            { scope: "offline_access" }
          )
        )
        expect(tokens.response.status).toBe(200)

        // Replaced (another display-name claim): everything held under the old connection ends.
        const replaced = yield* api.put(
          path,
          { oidc: { ...connection, name_claim: "sub" }, ldap: ldapOff },
          ifMatch(saved.body)
        )
        expect(replaced.status).toBe(200)
        const refreshed = yield* Effect.promise(() => refresh(gateway.baseUrl, String(tokens.body["refresh_token"])))
        expect(refreshed.body["error"]).toBe("invalid_grant")
        expect(logs.events("identity.providers_updated").at(-1)).toMatchObject({
          replaced: ["oidc"],
          revoked: [expect.objectContaining({ connection: "oidc", users: 1 })]
        })
        // The browser's sign-in is gone too: a new authorization shows the sign-in page again.
        const again = yield* Effect.promise(() => signInThroughUpstream(gateway, provider, "root-sub", done.browser))
        expect(again.callback).toBeDefined()
        expect(callbackParams(again.last).get("code")).toEqual(expect.any(String))
      }),
    60_000
  )
})

describe("trying a draft OIDC connection (probe and test)", () => {
  it.scoped(
    "probe reports discovery and keys without saving; a test's one-use start_url signs in at the provider and only its owner reads the result",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        const provider = yield* providerForPort(port)
        provider.accounts.set("tester", { name: "Tess", groups: ["qa"] })
        const gateway = yield* oauthGateway({ port })
        const api = managementApi(gateway, yield* adminToken(gateway))
        const draft = {
          enabled: true,
          issuer: provider.issuer,
          client_id: provider.clientId,
          client_secret: provider.clientSecret,
          scopes: ["openid", "profile", "corp"],
          groups_claim: "groups",
          ca_pem: provider.ca.caPem
        }
        const probed = yield* api.post(`${path}/probe`, { source: "oidc", oidc: draft })
        expect(probed.status).toBe(200)
        expect(probed.body).toMatchObject({
          source: "oidc",
          reachable: true,
          issuer: provider.issuer,
          token_endpoint: expect.stringContaining(provider.issuer),
          signing_keys: 1
        })
        const unreachable = yield* api.post(`${path}/probe`, {
          source: "oidc",
          oidc: { ...draft, issuer: "https://127.0.0.1:1" }
        })
        expect(unreachable.body).toMatchObject({ reachable: false, reason: "discovery_failed" })
        const untrusted = yield* api.post(`${path}/probe`, { source: "oidc", oidc: { ...draft, ca_pem: undefined } })
        expect(untrusted.body).toMatchObject({ reachable: false, reason: "discovery_failed" })
        expect((yield* api.post(`${path}/probe`, { source: "oidc" })).status).toBe(400)
        expect((yield* api.get(path)).body["revision"]).toBe("0")

        const started = yield* api.post(`${path}/test`, { source: "oidc", oidc: draft })
        expect(started.body).toMatchObject({ source: "oidc", status: "waiting", start_url: expect.any(String) })
        const id = String(started.body["id"])
        expect((yield* api.get(`${path}/tests/${id}`)).body["status"]).toBe("waiting")
        const startUrl = String(started.body["start_url"])
        expect(startUrl.startsWith(`${gateway.baseUrl}/sso/login/test?`)).toBe(true)
        const toProvider = yield* Effect.promise(() => fetch(startUrl, { redirect: "manual" }))
        expect(toProvider.status).toBe(303)
        provider.nextLogin = { accountId: "tester" }
        const callback = yield* Effect.promise(() => provider.signIn(toProvider.headers.get("location")!))
        const finished = yield* Effect.promise(() => fetch(callback, { redirect: "manual" }))
        expect(yield* Effect.promise(() => finished.text())).toContain("Connection test succeeded")
        const result = yield* api.get(`${path}/tests/${id}`)
        expect(result.body).toMatchObject({
          status: "succeeded",
          identity: { subject: "tester", groups: ["qa"] }
        })
        // One use only; nobody was created; an unknown id is 404.
        expect((yield* Effect.promise(() => fetch(startUrl, { redirect: "manual" }))).status).toBe(400)
        const listed = (yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>
        expect(listed.filter((user) => user["kind"] === "enterprise")).toEqual([])
        expect((yield* api.get(`${path}/tests/unknown`)).status).toBe(404)
        // Another administrator does not see it.
        const otherId = yield* addLocalUser(gateway, "second-admin", "another long password 42")
        const other = ((yield* api.get("/api/v1/identities")).body["users"] as Array<Record<string, unknown>>).find(
          (user) => user["id"] === otherId
        )!
        const promoted = yield* api.put(
          `/api/v1/identities/${otherId}`,
          { enabled: true, groups: ["administrators"] },
          ifMatch(other)
        )
        expect(promoted.status).toBe(200)
        const second = yield* signInForAdminToken(gateway, "second-admin", "another long password 42")
        const otherApi = managementApi(gateway, String(second["access_token"]))
        expect((yield* otherApi.get(`${path}/tests/${id}`)).status).toBe(404)
        // A save ends the tests: results are gone, and an unused start link no longer starts anything.
        const unused = yield* api.post(`${path}/test`, { source: "oidc", oidc: draft })
        expect((yield* api.put(path, { oidc: oidcOff, ldap: ldapOff }, { "if-match": '"0"' })).status).toBe(200)
        expect((yield* api.get(`${path}/tests/${id}`)).status).toBe(404)
        const late = yield* Effect.promise(() => fetch(String(unused.body["start_url"]), { redirect: "manual" }))
        expect(late.status).toBe(400)
        expect(yield* Effect.promise(() => late.text())).toContain("saved since this test started")
      }),
    60_000
  )
})

describe("drafts and the stored secrets", () => {
  it.scoped("a draft naming another issuer, client id, LDAP address or bind DN must bring its own secret", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const api = managementApi(gateway, yield* adminToken(gateway))
      const stored = {
        oidc: {
          enabled: false,
          issuer: "https://login.example.com",
          client_id: "gateway",
          client_secret: "stored-oidc-secret"
        },
        ldap: {
          enabled: false,
          url: "ldaps://ldap.example.com:636",
          bind_dn: "cn=gateway,dc=example,dc=com",
          bind_password: "stored-bind-password"
        }
      }
      expect((yield* api.put(path, stored, { "if-match": '"0"' })).status).toBe(200)
      const { client_secret: _secret, ...oidc } = stored.oidc
      const { bind_password: _password, ...ldap } = stored.ldap
      for (const [body, message] of [
        [
          { source: "oidc", oidc: { ...oidc, issuer: "https://evil.example" } },
          "oidc.client_secret: required for a draft naming another issuer"
        ],
        [
          { source: "oidc", oidc: { ...oidc, client_id: "other" } },
          "oidc.client_secret: required for a draft naming another issuer"
        ],
        [
          { source: "ldap", ldap: { ...ldap, url: "ldaps://evil.example:636" } },
          "ldap.bind_password: required for a draft naming another address"
        ],
        [
          { source: "ldap", ldap: { ...ldap, bind_dn: "cn=other" } },
          "ldap.bind_password: required for a draft naming another address"
        ]
      ] as const) {
        for (const endpoint of ["probe", "test"]) {
          const answer = yield* api.post(`${path}/${endpoint}`, body)
          expect([endpoint, message, answer.status]).toEqual([endpoint, message, 400])
          expect(String(answer.body["error_description"])).toContain(message)
        }
      }
      // The stored server and account: the stored secret is used (the draft is tried, not refused).
      expect((yield* api.post(`${path}/test`, { source: "oidc", oidc })).body).toMatchObject({ status: "waiting" })
    })
  )
})
