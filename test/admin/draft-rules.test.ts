/**
 * docs/enterprise-sign-in.md, "Trying a connection": a draft passes every rule a save does — one check
 * (src/identity/providers/settings.ts, `oidcProblems` and `ldapProblems`) for both paths. Each rule of
 * a save is broken once in an otherwise complete connection: the save (`PUT`, the connection enabled)
 * and both draft endpoints (`probe`, `test`) answer 400 naming the same rule, before anything is
 * contacted; nothing is saved.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, managementApi } from "../support/admin-api.js"
import { oauthGateway } from "../support/oauth-gateway.js"

const path = "/api/v1/identity-providers"

const oidc: Record<string, unknown> = {
  enabled: true,
  issuer: "https://login.example.com",
  client_id: "gateway",
  client_secret: "very-secret-value-0123456789",
  scopes: ["openid", "profile"]
}
const ldap: Record<string, unknown> = {
  enabled: true,
  url: "ldaps://ldap.example.com",
  bind_dn: "cn=gateway,dc=example,dc=com",
  bind_password: "bind-secret-0123456789",
  user_search_base: "ou=people,dc=example,dc=com",
  user_search_filter: "(uid={{username}})",
  user_id_attribute: "entryUUID",
  user_name_attribute: "displayName"
}
const groupSearch = {
  group_search_base: "ou=groups,dc=example,dc=com",
  group_search_filter: "(member={{dn}})",
  group_id_attribute: "entryUUID",
  group_name_attribute: "cn"
}

/** Settings with `changes` applied; a change to `undefined` leaves the setting out. */
const changed = (base: Record<string, unknown>, changes: Record<string, unknown>) =>
  Object.fromEntries(Object.entries({ ...base, ...changes }).filter(([, value]) => value !== undefined))

interface Rule {
  readonly source: "oidc" | "ldap"
  readonly changes: Record<string, unknown>
  /** What the save names; the drafts name the same. */
  readonly message: string
}

const rules: ReadonlyArray<Rule> = [
  { source: "oidc", changes: { issuer: undefined }, message: "oidc.issuer: required" },
  { source: "oidc", changes: { client_id: undefined }, message: "oidc.client_id: required" },
  { source: "oidc", changes: { client_secret: undefined }, message: "oidc.client_secret: required" },
  { source: "oidc", changes: { client_secret: "" }, message: "oidc.client_secret: required" },
  { source: "oidc", changes: { scopes: ["profile"] }, message: 'oidc.scopes: must include "openid"' },
  // The report: a tenant claim without its value answered 200 to a draft and admitted every tenant.
  {
    source: "oidc",
    changes: { tenant_claim: "tid" },
    message: "oidc.tenant_claim, oidc.tenant_value: both or neither"
  },
  {
    source: "oidc",
    changes: { tenant_value: "t-1" },
    message: "oidc.tenant_claim, oidc.tenant_value: both or neither"
  },
  { source: "oidc", changes: { issuer: "http://login.example.com" }, message: "must be an https URL" },
  { source: "oidc", changes: { issuer: "https://u:p@login.example.com" }, message: "must not carry credentials" },
  { source: "oidc", changes: { ca_pem: "not a certificate" }, message: "PEM" },
  { source: "oidc", changes: { surprise: 1 }, message: "surprise" },
  ...(
    ["url", "bind_dn", "user_search_base", "user_search_filter", "user_id_attribute", "user_name_attribute"] as const
  ).map((key): Rule => ({ source: "ldap", changes: { [key]: undefined }, message: `ldap.${key}: required` })),
  { source: "ldap", changes: { bind_password: undefined }, message: "ldap.bind_password: required" },
  { source: "ldap", changes: { bind_password: "" }, message: "ldap.bind_password: required" },
  { source: "ldap", changes: { url: "https://ldap.example.com" }, message: "ldap.url: must start with ldaps://" },
  { source: "ldap", changes: { url: "ldaps://ldap.example.com/dc=x" }, message: "ldap.url: must not have a path" },
  {
    source: "ldap",
    changes: { user_search_filter: "(uid={{user}})" },
    message: "ldap.user_search_filter: {{user}} is not a placeholder"
  },
  {
    source: "ldap",
    changes: { user_search_filter: "({{username}}=alice)" },
    message: "ldap.user_search_filter: placeholders must stand for values"
  },
  {
    source: "ldap",
    changes: { user_id_attribute: "entry UUID" },
    message: "ldap.user_id_attribute: must be one attribute name"
  },
  {
    source: "ldap",
    changes: { group_search_base: groupSearch.group_search_base },
    message: "group_search_filter, group_id_attribute, group_name_attribute: all four or none"
  },
  {
    source: "ldap",
    changes: { ...groupSearch, group_search_filter: "(objectClass=groupOfNames)" },
    message: "ldap.group_search_filter: must contain {{dn}} or {{username}}"
  },
  { source: "ldap", changes: { ca_pem: "not a certificate" }, message: "PEM" }
]

describe("drafts pass every rule a save does", () => {
  it.scoped(
    "each rule of a save, broken in an otherwise complete connection, is the same 400 for the save, a probe and a test; nothing is saved",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway()
        const api = managementApi(gateway, yield* adminToken(gateway))
        // The complete connections pass all three (the drafts then fail only at the network).
        expect((yield* api.put(path, { oidc, ldap }, { "if-match": '"0"' })).status).toBe(200)
        // Then nothing stored: no secret of the stored connections stands in for a missing one.
        const cleared = { oidc: { enabled: false, client_secret: "" }, ldap: { enabled: false, bind_password: "" } }
        expect((yield* api.put(path, cleared, { "if-match": '"1"' })).status).toBe(200)
        for (const rule of rules) {
          const settings = changed(rule.source === "oidc" ? oidc : ldap, rule.changes)
          const other = { enabled: false }
          const body = rule.source === "oidc" ? { oidc: settings, ldap: other } : { oidc: other, ldap: settings }
          const answers = yield* Effect.all(
            {
              save: api.put(path, body, { "if-match": '"2"' }),
              probe: api.post(`${path}/probe`, { source: rule.source, [rule.source]: settings }),
              test: api.post(`${path}/test`, {
                source: rule.source,
                [rule.source]: settings,
                ...(rule.source === "ldap" ? { username: "alice", password: "pw" } : {})
              })
            },
            { concurrency: "unbounded" }
          )
          for (const [endpoint, answer] of Object.entries(answers)) {
            expect([rule.message, endpoint, answer.status, answer.body["error"]]).toEqual([
              rule.message,
              endpoint,
              400,
              "invalid_request"
            ])
            expect(String(answer.body["error_description"])).toContain(rule.message)
          }
        }
        expect((yield* api.get(path)).body["revision"]).toBe("2")
      }),
    60_000
  )

  it.scoped("a draft that is not enabled is still checked as complete: it is tried, so it must be whole", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const api = managementApi(gateway, yield* adminToken(gateway))
      const draft = changed(oidc, { enabled: false, client_id: undefined, tenant_claim: "tid" })
      const answer = yield* api.post(`${path}/test`, { source: "oidc", oidc: draft })
      expect(answer.status).toBe(400)
      // Every problem at once, as a save names them.
      expect(answer.body["error_description"]).toBe(
        "oidc.client_id: required to try a draft; oidc.tenant_claim, oidc.tenant_value: both or neither"
      )
    })
  )
})
