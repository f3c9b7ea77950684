/**
 * LDAP settings (docs/ldap.md, "Settings"): every problem reported with its key and a message that says
 * what to write instead, and the identity namespace that changes exactly when who-is-who may change.
 */
import { describe, expect, it } from "@effect/vitest"
import { Redacted, Schema } from "effect"
import { ldapNamespace } from "../../../src/identity/ldap/namespace.js"
import {
  LdapSettings,
  parseLdapUrl,
  validateLdapFields,
  validateLdapSettings
} from "../../../src/identity/ldap/settings.js"
import { directorySettings, makeLdapCertificates, withoutGroups } from "../../support/slapd.js"

const valid = directorySettings("ldaps://ldap.example.com:636", undefined)

const problemsOf = (changes: Partial<LdapSettings>) => validateLdapSettings({ ...valid, ...changes })
const messageFor = (path: keyof LdapSettings, changes: Partial<LdapSettings>) =>
  problemsOf(changes).find((problem) => problem.path === path)?.message

describe("LDAP settings", () => {
  it("decodes from JSON with the bind password redacted; valid settings have no problems", () => {
    const decoded = Schema.decodeUnknownSync(LdapSettings)({
      ...valid,
      bind_password: "service-password"
    })
    expect(Redacted.isRedacted(decoded.bind_password)).toBe(true)
    expect(String(decoded.bind_password)).not.toContain("service-password")
    expect(validateLdapSettings(decoded)).toEqual([])
    expect(validateLdapSettings(withoutGroups(valid))).toEqual([])
    expect(validateLdapSettings({ ...valid, url: "ldap://10.0.0.5" })).toEqual([])
  })

  it("url: ldaps:// or ldap:// with a host and a port, nothing else", () => {
    expect(parseLdapUrl("ldaps://LDAP.example.com")).toEqual({ scheme: "ldaps", host: "ldap.example.com", port: 636 })
    expect(parseLdapUrl("ldap://10.0.0.5:1389")).toEqual({ scheme: "ldap", host: "10.0.0.5", port: 1389 })
    expect(messageFor("url", { url: "https://ldap.example.com" })).toBe(
      "must start with ldaps:// (TLS) or ldap:// (always upgraded with StartTLS), not https://"
    )
    expect(messageFor("url", { url: "ldaps://gateway:secret@ldap.example.com" })).toBe(
      "must not contain a user name or password: the service account goes in bind_dn and bind_password"
    )
    expect(messageFor("url", { url: "ldaps://ldap.example.com:636/dc=example,dc=com" })).toMatch(
      /^must not have a path/
    )
    expect(messageFor("url", { url: "ldaps://ldap.example.com:636/" })).toMatch(/^must not have a path/)
    expect(messageFor("url", { url: "ldaps://ldap.example.com:636?uid" })).toMatch(/^must not have a query/)
    expect(messageFor("url", { url: "ldaps://[::1]:636" })).toMatch(/^IPv6 addresses are not supported/)
    expect(messageFor("url", { url: "ldaps://ldap_example:636" })).toMatch(/^must name the directory's host/)
    expect(messageFor("url", { url: "ldaps://ldap.example.com:0" })).toBe("the port must be 1-65535")
    expect(messageFor("url", { url: "ldap.example.com" })).toBe(
      "must be ldaps://host:port (TLS) or ldap://host:port (always upgraded with StartTLS)"
    )
  })

  it("user_search_filter: exactly one {{username}}, standing for a value, in a valid filter", () => {
    expect(messageFor("user_search_filter", { user_search_filter: "(uid=*)" })).toBe(
      "must contain {{username}} exactly once (found 0), e.g. (&(objectClass=person)(uid={{username}}))"
    )
    expect(
      messageFor("user_search_filter", { user_search_filter: "(|(uid={{username}})(mail={{username}}))" })
    ).toMatch(/found 2/)
    expect(messageFor("user_search_filter", { user_search_filter: "(member={{dn}})" })).toMatch(
      /^\{\{dn\}\} is only known once the person is found/
    )
    expect(messageFor("user_search_filter", { user_search_filter: "(uid={{user}})" })).toBe(
      "{{user}} is not a placeholder: use {{username}}"
    )
    expect(messageFor("user_search_filter", { user_search_filter: "(uid={{username}}" })).toMatch(
      /^must be an RFC 4515 filter in parentheses$/
    )
    expect(messageFor("user_search_filter", { user_search_filter: "(&(uid={{username}})(cn=a(b))" })).toMatch(
      /^is not a valid LDAP filter \(RFC 4515\)/
    )
    expect(messageFor("user_search_filter", { user_search_filter: "uid={{username}}" })).toBe(
      "must be an RFC 4515 filter in parentheses"
    )
    expect(messageFor("user_search_filter", { user_search_filter: "({{username}}=x)" })).toBe(
      "placeholders must stand for values, e.g. (uid={{username}}), never for attribute names"
    )
  })

  it("the group search: all four settings or none, and a filter naming the person", () => {
    const { group_search_filter: _filter, group_name_attribute: _name, ...partial } = valid
    const problems = validateLdapSettings(partial)
    expect(problems.map((problem) => problem.path)).toEqual(["group_search_filter", "group_name_attribute"])
    expect(problems[0]?.message).toBe(
      "must be set too: group_search_base, group_id_attribute are set, and the group search needs " +
        "group_search_base, group_search_filter, group_id_attribute and group_name_attribute together " +
        "(leave all four out for no group search)"
    )
    expect(messageFor("group_search_filter", { group_search_filter: "(objectClass=groupOfNames)" })).toMatch(
      /^must contain \{\{dn\}\} or \{\{username\}\}/
    )
    expect(
      messageFor("group_search_filter", { group_search_filter: "(|(member={{dn}})(memberUid={{username}}))" })
    ).toBeUndefined()
  })

  it("DNs, attributes, the bind password and the CA certificates", () => {
    expect(messageFor("bind_dn", { bind_dn: " " })).toMatch(/^must not be empty/)
    expect(messageFor("user_search_base", { user_search_base: "ou=people\n,dc=x" })).toMatch(/control characters/)
    expect(messageFor("user_id_attribute", { user_id_attribute: "entry UUID" })).toBe(
      "must be one attribute name, e.g. entryUUID or objectGUID"
    )
    expect(messageFor("user_id_attribute", { user_id_attribute: "objectGUID;binary" })).toBeUndefined()
    expect(messageFor("bind_password", { bind_password: Redacted.make("") })).toBe(
      "must not be empty: a DN with an empty password is an anonymous bind"
    )
    expect(messageFor("ca_pem", { ca_pem: "not a certificate" })).toBe(
      "must contain PEM certificates (-----BEGIN CERTIFICATE-----)"
    )
    expect(messageFor("ca_pem", { ca_pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" })).toBe(
      "certificate 1 is not a readable X.509 certificate"
    )
    expect(messageFor("ca_pem", { ca_pem: "-----BEGIN PRIVATE KEY-----\n…" })).toMatch(/private key/)
    const certificates = makeLdapCertificates()
    try {
      expect(messageFor("ca_pem", { ca_pem: certificates.caPem + certificates.otherCaPem })).toBeUndefined()
    } finally {
      certificates.remove()
    }
  })
})

describe("validateLdapFields", () => {
  it("checks what a draft gives and requires nothing", () => {
    expect(validateLdapFields({})).toEqual([])
    expect(validateLdapFields({ url: "ldaps://ldap.example.com", user_id_attribute: "entryUUID" })).toEqual([])
    expect(
      validateLdapFields({ url: "ldap://ldap.example.com?x", user_search_filter: "(uid=alice)" }).map(
        (problem) => problem.path
      )
    ).toEqual(["url", "user_search_filter"])
    // The group search's all-four-or-none is the whole check's (and the stored settings' own) rule.
    expect(validateLdapFields({ group_search_base: "ou=groups,dc=example,dc=com" })).toEqual([])
  })
})

describe("ldapNamespace", () => {
  it("is ldap: and a SHA-256, stable, and new whenever who-is-who may change", () => {
    const namespace = ldapNamespace(valid)
    expect(namespace).toMatch(/^ldap:[0-9a-f]{64}$/)
    expect(ldapNamespace({ ...valid })).toBe(namespace)
    const changes: ReadonlyArray<Partial<LdapSettings>> = [
      { url: "ldaps://ldap.example.com:1636" },
      { user_search_base: "ou=staff,dc=example,dc=com" },
      { user_search_filter: "(mail={{username}})" },
      { user_id_attribute: "objectGUID" },
      { group_search_base: "ou=teams,dc=example,dc=com" },
      { group_search_filter: "(uniqueMember={{dn}})" },
      { group_id_attribute: "objectGUID" }
    ]
    const namespaces = changes.map((change) => ldapNamespace({ ...valid, ...change }))
    expect(new Set([namespace, ...namespaces]).size).toBe(changes.length + 1)
    expect(ldapNamespace(withoutGroups(valid))).not.toBe(namespace)
    // Who is who does not depend on display names, the service account or the CA.
    const otherwise: LdapSettings = {
      ...valid,
      user_name_attribute: "cn",
      group_name_attribute: "description",
      bind_dn: "cn=other",
      bind_password: Redacted.make("other"),
      ca_pem: "x"
    }
    expect(ldapNamespace(otherwise)).toBe(namespace)
  })

  it("is named from the identity settings alone: a stored connection has no password to give", () => {
    const { bind_password: _password, bind_dn: _dn, user_name_attribute: _name, ...identity } = valid
    expect(ldapNamespace(identity)).toBe(ldapNamespace(valid))
  })
})
