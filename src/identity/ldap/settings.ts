import { X509Certificate } from "node:crypto"
import { isIP } from "node:net"
import { Redacted, Schema } from "effect"
import { placeholdersIn, templateSyntaxProblem } from "./filter.js"

/**
 * One LDAP directory people sign in against (docs/ldap.md). The connection is always encrypted and
 * always verified: `ldaps://` speaks TLS from the first byte, `ldap://` is upgraded with StartTLS before
 * anything else is sent, and there is no setting to skip either or to stop checking the certificate.
 */
export const LdapSettings = Schema.Struct({
  /** `ldaps://host[:port]`, or `ldap://host[:port]` (StartTLS, always). Nothing else: no credentials, path or query. */
  url: Schema.String,
  /** The service account that searches for people and groups. */
  bind_dn: Schema.String,
  bind_password: Schema.Redacted(Schema.String),
  user_search_base: Schema.String,
  /** An RFC 4515 filter with `{{username}}` exactly once, e.g. `(&(objectClass=person)(uid={{username}}))`. */
  user_search_filter: Schema.String,
  /** An attribute that never changes for a person (entryUUID, objectGUID): the identity's subject. */
  user_id_attribute: Schema.String,
  user_name_attribute: Schema.String,
  /** The group search: all four or none. */
  group_search_base: Schema.optional(Schema.String),
  /** `{{dn}}` (the person's DN) and/or `{{username}}`, e.g. `(&(objectClass=groupOfNames)(member={{dn}}))`. */
  group_search_filter: Schema.optional(Schema.String),
  group_id_attribute: Schema.optional(Schema.String),
  group_name_attribute: Schema.optional(Schema.String),
  /** PEM certificates to trust for the directory instead of the system's roots. */
  ca_pem: Schema.optional(Schema.String)
})
export type LdapSettings = typeof LdapSettings.Type

export interface LdapSettingsProblem {
  /** The settings key, e.g. `user_search_filter`. */
  readonly path: string
  readonly message: string
}

/** Where to connect and how TLS starts. */
export interface LdapEndpoint {
  readonly scheme: "ldaps" | "ldap"
  /** A DNS name or an IPv4 address: what the certificate must name. */
  readonly host: string
  readonly port: number
}

const URL_SHAPE = "must be ldaps://host:port (TLS) or ldap://host:port (always upgraded with StartTLS)"
const DNS_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/

/** The endpoint `url` names, or why it names none (the message `validateLdapSettings` reports). */
export const parseLdapUrl = (url: string): LdapEndpoint | string => {
  // The URL parser would drop surrounding spaces; the text is what the namespace is made of.
  if (url !== url.trim()) return URL_SHAPE
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return URL_SHAPE
  }
  const scheme = parsed.protocol.toLowerCase()
  if (scheme !== "ldaps:" && scheme !== "ldap:") {
    return `must start with ldaps:// (TLS) or ldap:// (always upgraded with StartTLS), not ${parsed.protocol}//`
  }
  if (!url.slice(scheme.length).startsWith("//")) return URL_SHAPE
  if (parsed.username !== "" || parsed.password !== "") {
    return "must not contain a user name or password: the service account goes in bind_dn and bind_password"
  }
  if (parsed.pathname !== "") {
    return "must not have a path: the search bases are separate settings (user_search_base, group_search_base)"
  }
  if (parsed.search !== "" || parsed.hash !== "" || url.includes("?") || url.includes("#")) {
    return "must not have a query or fragment: filters and attributes are separate settings"
  }
  const host = parsed.hostname
  // The LDAP client reads bracketed IPv6 literals wrongly; a DNS name for such a host works.
  if (host.startsWith("[")) return "IPv6 addresses are not supported here: use the directory's DNS name"
  if (host === "" || !(isIP(host) === 4 || DNS_NAME.test(host))) {
    return "must name the directory's host: a DNS name or an IPv4 address"
  }
  const port = parsed.port === "" ? (scheme === "ldaps:" ? 636 : 389) : Number(parsed.port)
  if (!Number.isInteger(port) || port < 1 || port > 65535) return "the port must be 1-65535"
  return { scheme: scheme === "ldaps:" ? "ldaps" : "ldap", host: host.toLowerCase(), port }
}

/** RFC 4512 attribute descriptions: a name (`entryUUID`) or an OID, optionally with options (`;binary`). */
const ATTRIBUTE = /^(?:[A-Za-z][A-Za-z0-9-]*|[0-9]+(?:\.[0-9]+)*)(?:;[A-Za-z0-9-]+)*$/
const CONTROL = /\p{Cc}/u
const MAX_DN_LENGTH = 1024
const MAX_FILTER_LENGTH = 1024
const MAX_ATTRIBUTE_LENGTH = 256
const MAX_BIND_PASSWORD_LENGTH = 1024
const MAX_CA_PEM_LENGTH = 64 * 1024

const GROUP_KEYS = ["group_search_base", "group_search_filter", "group_id_attribute", "group_name_attribute"] as const

const dnProblem = (value: string, example: string): string | undefined => {
  if (value.trim() === "") return `must not be empty, e.g. ${example}`
  if (value.length > MAX_DN_LENGTH) return `must be at most ${MAX_DN_LENGTH} characters`
  if (CONTROL.test(value)) return "must not contain control characters (line breaks, tabs, NUL)"
  return undefined
}

const attributeProblem = (value: string, example: string): string | undefined => {
  if (value.length > MAX_ATTRIBUTE_LENGTH) return `must be at most ${MAX_ATTRIBUTE_LENGTH} characters`
  if (!ATTRIBUTE.test(value)) return `must be one attribute name, e.g. ${example}`
  return undefined
}

const bindPasswordProblem = (password: Redacted.Redacted<string>): string | undefined => {
  const value = Redacted.value(password)
  // A DN with an empty password is an unauthenticated bind, which some servers answer with success.
  if (value === "") return "must not be empty: a DN with an empty password is an anonymous bind"
  if (value.length > MAX_BIND_PASSWORD_LENGTH) return `must be at most ${MAX_BIND_PASSWORD_LENGTH} characters`
  return undefined
}

/**
 * The user filter holds `{{username}}` exactly once; the group filter `{{dn}}` and/or `{{username}}`,
 * each at most once (without either, everyone would get the same groups).
 */
const filterProblem = (template: string, kind: "user" | "group", example: string): string | undefined => {
  if (template.trim() === "") return `must not be empty, e.g. ${example}`
  if (template.length > MAX_FILTER_LENGTH) return `must be at most ${MAX_FILTER_LENGTH} characters`
  if (CONTROL.test(template)) return "must not contain control characters (line breaks, tabs, NUL)"
  const names = placeholdersIn(template)
  const unknown = names.find((name) => name !== "username" && name !== "dn")
  if (unknown !== undefined) {
    return `{{${unknown}}} is not a placeholder: use {{username}}${kind === "group" ? " or {{dn}}" : ""}`
  }
  const usernames = names.filter((name) => name === "username").length
  const dns = names.filter((name) => name === "dn").length
  if (kind === "user") {
    if (dns > 0) return "{{dn}} is only known once the person is found: it belongs in group_search_filter"
    if (usernames !== 1) return `must contain {{username}} exactly once (found ${usernames}), e.g. ${example}`
  } else {
    if (usernames + dns === 0) {
      return `must contain {{dn}} or {{username}}, e.g. ${example}: without one, everyone would get the same groups`
    }
    if (usernames > 1 || dns > 1) return "must contain {{dn}} and {{username}} at most once each"
  }
  return templateSyntaxProblem(template)
}

const caPemProblem = (pem: string): string | undefined => {
  if (pem.length > MAX_CA_PEM_LENGTH) return `must be at most ${MAX_CA_PEM_LENGTH} characters`
  // Only trust anchors belong here; a key pasted by mistake must not be stored with the settings.
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) return "must not contain a private key: give only certificates"
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []
  if (blocks.length === 0) return "must contain PEM certificates (-----BEGIN CERTIFICATE-----)"
  for (const [index, block] of blocks.entries()) {
    try {
      new X509Certificate(block)
    } catch {
      return `certificate ${index + 1} is not a readable X.509 certificate`
    }
  }
  return undefined
}

/** Settings as far as they are given: a draft (a stored connection not yet enabled) may leave any out. */
export type LdapSettingsDraft = { readonly [K in keyof LdapSettings]?: LdapSettings[K] | undefined }

/**
 * The problems of the settings that are given, each with its key: every value must be well-formed, but
 * none is required (an absent key has no problem here). Pure: nothing is contacted. The Management API
 * checks stored connections with it (src/identity/providers/settings.ts); `validateLdapSettings` is the
 * whole check.
 */
export const validateLdapFields = (settings: LdapSettingsDraft): ReadonlyArray<LdapSettingsProblem> => {
  const problems: Array<LdapSettingsProblem> = []
  const add = (path: string, message: string | undefined) => {
    if (message !== undefined) problems.push({ path, message })
  }
  if (settings.url !== undefined) {
    const endpoint = parseLdapUrl(settings.url)
    add("url", typeof endpoint === "string" ? endpoint : undefined)
  }
  if (settings.bind_dn !== undefined) {
    add("bind_dn", dnProblem(settings.bind_dn, "cn=gateway,ou=services,dc=example,dc=com"))
  }
  if (settings.bind_password !== undefined) add("bind_password", bindPasswordProblem(settings.bind_password))
  if (settings.user_search_base !== undefined) {
    add("user_search_base", dnProblem(settings.user_search_base, "ou=people,dc=example,dc=com"))
  }
  if (settings.user_search_filter !== undefined) {
    add(
      "user_search_filter",
      filterProblem(settings.user_search_filter, "user", "(&(objectClass=person)(uid={{username}}))")
    )
  }
  if (settings.user_id_attribute !== undefined) {
    add("user_id_attribute", attributeProblem(settings.user_id_attribute, "entryUUID or objectGUID"))
  }
  if (settings.user_name_attribute !== undefined) {
    add("user_name_attribute", attributeProblem(settings.user_name_attribute, "displayName or cn"))
  }
  if (settings.group_search_base !== undefined) {
    add("group_search_base", dnProblem(settings.group_search_base, "ou=groups,dc=example,dc=com"))
  }
  if (settings.group_search_filter !== undefined) {
    add(
      "group_search_filter",
      filterProblem(settings.group_search_filter, "group", "(&(objectClass=groupOfNames)(member={{dn}}))")
    )
  }
  if (settings.group_id_attribute !== undefined) {
    add("group_id_attribute", attributeProblem(settings.group_id_attribute, "entryUUID or objectGUID"))
  }
  if (settings.group_name_attribute !== undefined) {
    add("group_name_attribute", attributeProblem(settings.group_name_attribute, "cn"))
  }
  if (settings.ca_pem !== undefined) add("ca_pem", caPemProblem(settings.ca_pem))
  return problems
}

/**
 * Every problem of `settings`, each with its key; empty when the directory can be used. Pure: nothing
 * is contacted. `authenticate` refuses settings with problems (`invalid_settings`) before any network.
 */
export const validateLdapSettings = (settings: LdapSettings): ReadonlyArray<LdapSettingsProblem> => {
  const problems = [...validateLdapFields(settings)]
  const present = GROUP_KEYS.filter((key) => settings[key] !== undefined)
  if (present.length > 0 && present.length < GROUP_KEYS.length) {
    for (const key of GROUP_KEYS.filter((each) => settings[each] === undefined)) {
      problems.push({
        path: key,
        message:
          `must be set too: ${present.join(", ")} ${present.length === 1 ? "is" : "are"} set, and the group search ` +
          "needs group_search_base, group_search_filter, group_id_attribute and group_name_attribute together " +
          "(leave all four out for no group search)"
      })
    }
  }
  return problems
}
