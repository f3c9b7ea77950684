import { X509Certificate } from "node:crypto"
import { type Redacted, Schema } from "effect"
import { validateLdapFields } from "../ldap/settings.js"

/**
 * The identity connections an administrator stores through the Management API (docs/enterprise-sign-in.md,
 * "Identity-provider settings"): one OIDC and one LDAP connection. Secrets are write-only: a body's
 * `client_secret` / `bind_password` sets it, an empty string clears it, omitting it keeps it (only while
 * its destination is unchanged: `sameOidcDestination`, `sameLdapDestination`); reads say only whether
 * one is configured.
 */

const Text = (max: number) => Schema.String.pipe(Schema.minLength(1), Schema.maxLength(max))
const HttpsUrl = Text(2048).pipe(
  Schema.filter((text) => {
    const url = URL.parse(text)
    if (url === null) return "expected an absolute URL"
    if (url.protocol !== "https:") return "must be an https URL"
    if (url.username !== "" || url.password !== "") return "must not carry credentials"
    return undefined
  })
)
const Claim = Text(256)
/** One or more PEM certificates, each of which parses. */
const Pem = Text(64 * 1024).pipe(
  Schema.filter((text) => {
    const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
    if (blocks.length === 0) return "expected PEM certificates (-----BEGIN CERTIFICATE-----)"
    try {
      for (const block of blocks) new X509Certificate(block)
      return undefined
    } catch {
      return "holds a certificate that cannot be parsed"
    }
  })
)

export const OidcSettings = Schema.Struct({
  enabled: Schema.Boolean,
  issuer: Schema.optional(HttpsUrl),
  client_id: Schema.optional(Text(256)),
  token_auth_method: Schema.optionalWith(Schema.Literal("client_secret_basic", "client_secret_post"), {
    default: () => "client_secret_basic" as const
  }),
  scopes: Schema.optionalWith(Schema.Array(Text(256)).pipe(Schema.maxItems(32)), { default: () => ["openid"] }),
  name_claim: Schema.optional(Claim),
  groups_claim: Schema.optional(Claim),
  departments_claim: Schema.optional(Claim),
  tenant_claim: Schema.optional(Claim),
  tenant_value: Schema.optional(Text(256)),
  /** PEM certificates trusted for the provider's endpoints instead of the system roots. */
  ca_pem: Schema.optional(Pem)
})
export type OidcSettings = typeof OidcSettings.Type

export const LdapSettingsFields = Schema.Struct({
  enabled: Schema.Boolean,
  url: Schema.optional(Text(2048)),
  bind_dn: Schema.optional(Text(1024)),
  user_search_base: Schema.optional(Text(1024)),
  user_search_filter: Schema.optional(Text(1024)),
  user_id_attribute: Schema.optional(Text(256)),
  user_name_attribute: Schema.optional(Text(256)),
  group_search_base: Schema.optional(Text(1024)),
  group_search_filter: Schema.optional(Text(1024)),
  group_id_attribute: Schema.optional(Text(256)),
  group_name_attribute: Schema.optional(Text(256)),
  /** PEM certificates trusted for the directory instead of the system roots. */
  ca_pem: Schema.optional(Pem)
})
export type LdapSettingsFields = typeof LdapSettingsFields.Type

/**
 * Where a stored secret goes (docs/enterprise-sign-in.md, "Identity-provider settings"): a stored secret
 * is used — by a save that omits it, or a draft tried without it — only while the connection still names
 * the same destination. OIDC: the same issuer and client id. LDAP: the same scheme, host and port of
 * `url`, and the same bind DN. Otherwise the secret must be sent again, so no one can send the stored
 * secret to a server of their choosing.
 */
export const sameOidcDestination = (
  before: Pick<OidcSettings, "issuer" | "client_id" | "ca_pem">,
  after: Pick<OidcSettings, "issuer" | "client_id" | "ca_pem">
) => before.issuer === after.issuer && before.client_id === after.client_id && before.ca_pem === after.ca_pem

/** An LDAP URL's scheme, host and port (default ports written out); the text itself when it does not parse. */
const ldapAddress = (url: string | undefined) => {
  if (url === undefined) return undefined
  const parsed = URL.parse(url)
  if (parsed === null || parsed.hostname === "") return url
  const scheme = parsed.protocol.toLowerCase()
  const port = parsed.port !== "" ? parsed.port : scheme === "ldaps:" ? "636" : scheme === "ldap:" ? "389" : ""
  return `${scheme}//${parsed.hostname.toLowerCase()}:${port}`
}

/**
 * The CA a connection trusts is part of where its secret goes: a new one lets whoever holds it (and
 * the network path) answer for the same address.
 */
export const sameLdapDestination = (
  before: Pick<LdapSettingsFields, "url" | "bind_dn" | "ca_pem">,
  after: Pick<LdapSettingsFields, "url" | "bind_dn" | "ca_pem">
) =>
  ldapAddress(before.url) === ldapAddress(after.url) &&
  before.bind_dn === after.bind_dn &&
  before.ca_pem === after.ca_pem

/** What is stored (and compared to tell a replaced connection): both connections, without secrets. */
export const StoredSettings = Schema.Struct({
  oidc: Schema.optionalWith(OidcSettings, {
    default: () => ({ enabled: false, token_auth_method: "client_secret_basic" as const, scopes: ["openid"] })
  }),
  ldap: Schema.optionalWith(LdapSettingsFields, { default: () => ({ enabled: false }) })
})
export type StoredSettings = typeof StoredSettings.Type

/** `PUT /api/v1/identity-providers`: both connections, whole, with their write-only secrets. */
export const IdentityProvidersBody = Schema.Struct({
  oidc: Schema.extend(
    OidcSettings,
    Schema.Struct({ client_secret: Schema.optional(Schema.String.pipe(Schema.maxLength(4096))) })
  ),
  ldap: Schema.extend(
    LdapSettingsFields,
    Schema.Struct({ bind_password: Schema.optional(Schema.String.pipe(Schema.maxLength(1024))) })
  )
}).annotations({ identifier: "IdentityProvidersUpdate" })
export type IdentityProvidersBody = typeof IdentityProvidersBody.Type

/** `GET /api/v1/identity-providers`: the settings, each secret shown only as configured or not. */
export const IdentityProvidersRecord = Schema.Struct({
  oidc: Schema.extend(OidcSettings, Schema.Struct({ client_secret_configured: Schema.Boolean })),
  ldap: Schema.extend(LdapSettingsFields, Schema.Struct({ bind_password_configured: Schema.Boolean })),
  revision: Schema.String.annotations({ description: 'Send it back as If-Match ("0" before the first save)' }),
  updated_at: Schema.NullOr(Schema.String)
}).annotations({ identifier: "IdentityProviders" })
export type IdentityProvidersRecord = typeof IdentityProvidersRecord.Type

/**
 * How complete a connection must be, for the one check both paths run (`oidcProblems`,
 * `ldapProblems`): a save requires every setting of an enabled connection (a disabled one may be an
 * incomplete draft), and a draft that is tried requires all of them, enabled or not. Every value given
 * must be well-formed either way, and every rule between values holds either way.
 */
export interface Completeness {
  /** Why the required settings must be there (`when oidc.enabled is true`); undefined: none is required. */
  readonly required: string | undefined
  /** What to say when the connection's secret is missing; undefined: there is one (or none is required). */
  readonly missingSecret: string | undefined
}

/** The problems of an OIDC connection's settings: one list of rules for a save and for a draft. */
export const oidcProblems = (oidc: OidcSettings, completeness: Completeness): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const { required, missingSecret } = completeness
  if (required !== undefined) {
    if (oidc.issuer === undefined) problems.push(`oidc.issuer: required ${required}`)
    if (oidc.client_id === undefined) problems.push(`oidc.client_id: required ${required}`)
    if (missingSecret !== undefined) problems.push(missingSecret)
  }
  if (!oidc.scopes.includes("openid")) problems.push('oidc.scopes: must include "openid"')
  // A tenant claim without the value it must have (or the reverse) would admit every tenant.
  if ((oidc.tenant_claim === undefined) !== (oidc.tenant_value === undefined)) {
    problems.push("oidc.tenant_claim, oidc.tenant_value: both or neither")
  }
  return problems
}

/** The settings an LDAP connection cannot work without (the group search is all four or none). */
export const LDAP_REQUIRED = [
  "url",
  "bind_dn",
  "user_search_base",
  "user_search_filter",
  "user_id_attribute",
  "user_name_attribute"
] as const

/**
 * The problems of an LDAP connection's settings (`bindPassword`: the one it would bind with, checked
 * like any value given): one list of rules for a save and for a draft, the LDAP module's own rules on
 * each value (docs/ldap.md, "Settings") included.
 */
export const ldapProblems = (
  ldap: LdapSettingsFields,
  completeness: Completeness,
  bindPassword: Redacted.Redacted<string> | undefined
): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const { required, missingSecret } = completeness
  if (required !== undefined) {
    for (const key of LDAP_REQUIRED) if (ldap[key] === undefined) problems.push(`ldap.${key}: required ${required}`)
    if (missingSecret !== undefined) problems.push(missingSecret)
  }
  const { enabled: _enabled, ...given } = ldap
  const fields = bindPassword === undefined ? given : { ...given, bind_password: bindPassword }
  for (const { path, message } of validateLdapFields(fields)) problems.push(`ldap.${path}: ${message}`)
  const group = [ldap.group_search_base, ldap.group_search_filter, ldap.group_id_attribute, ldap.group_name_attribute]
  if (group.some((value) => value !== undefined) && group.some((value) => value === undefined)) {
    problems.push(
      "ldap.group_search_base, group_search_filter, group_id_attribute, group_name_attribute: all four or none"
    )
  }
  return problems
}

/** The problems of the connections as they would be saved, with the secrets they would keep. */
export const enabledProblems = (
  settings: StoredSettings,
  secrets: { readonly oidc: boolean; readonly ldapBindPassword: Redacted.Redacted<string> | undefined }
): ReadonlyArray<string> => {
  const { oidc, ldap } = settings
  return [
    ...oidcProblems(oidc, {
      required: oidc.enabled ? "when oidc.enabled is true" : undefined,
      missingSecret: secrets.oidc ? undefined : "oidc.client_secret: required when oidc.enabled is true"
    }),
    ...ldapProblems(
      ldap,
      {
        required: ldap.enabled ? "when ldap.enabled is true" : undefined,
        missingSecret:
          secrets.ldapBindPassword === undefined ? "ldap.bind_password: required when ldap.enabled is true" : undefined
      },
      secrets.ldapBindPassword
    )
  ]
}

/** `POST …/probe`: whether the draft connection answers, and what it published. */
export const ProbeRecord = Schema.Struct({
  source: Schema.Literal("oidc", "ldap"),
  reachable: Schema.Boolean,
  reason: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String),
  issuer: Schema.optional(Schema.String),
  authorization_endpoint: Schema.optional(Schema.String),
  token_endpoint: Schema.optional(Schema.String),
  signing_keys: Schema.optional(Schema.Number)
}).annotations({ identifier: "ConnectionProbe" })

/** Who a test sign-in found (nothing stored, no one created). */
export const TestIdentity = Schema.Struct({
  subject: Schema.String,
  name: Schema.NullOr(Schema.String),
  groups: Schema.Array(Schema.String),
  departments: Schema.Array(Schema.String),
  acr: Schema.NullOr(Schema.String),
  auth_time: Schema.NullOr(Schema.Number)
})

/** A connection test: for OIDC its one-use `start_url` and then its result; for LDAP the result at once. */
export const TestRecord = Schema.Struct({
  id: Schema.optional(Schema.String),
  source: Schema.Literal("oidc", "ldap"),
  status: Schema.Literal("waiting", "succeeded", "failed"),
  start_url: Schema.optional(Schema.String),
  expires_at: Schema.optional(Schema.String),
  identity: Schema.optional(TestIdentity),
  reason: Schema.optional(Schema.String),
  check: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String)
}).annotations({ identifier: "ConnectionTest" })
export type TestRecord = typeof TestRecord.Type
