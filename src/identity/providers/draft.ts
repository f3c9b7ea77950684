import { Redacted, Schema } from "effect"
import type { LdapSettings } from "../ldap/settings.js"
import { connectionOf, type UpstreamConnection } from "../upstream/connection.js"
import { oidcNamespace } from "./namespaces.js"
import type { StoredConnections } from "./service.js"
import {
  IdentityProvidersBody,
  LDAP_REQUIRED,
  type LdapSettingsFields,
  ldapProblems,
  type OidcSettings,
  oidcProblems,
  sameLdapDestination,
  sameOidcDestination
} from "./settings.js"

/**
 * `POST /api/v1/identity-providers/probe` and `/test` (docs/enterprise-sign-in.md, "Trying a
 * connection"): a draft of one connection, never saved. A draft without its secret uses the stored one
 * only while it names the same server and account as the stored connection (`sameOidcDestination`,
 * `sameLdapDestination` — the rule a save follows too): a draft naming another server must bring its own
 * secret, so a Management API token cannot send the stored secret to a server of its choosing.
 */
export const ConnectionDraftBody = Schema.Struct({
  source: Schema.Literal("oidc", "ldap"),
  oidc: Schema.optional(IdentityProvidersBody.fields.oidc),
  ldap: Schema.optional(IdentityProvidersBody.fields.ldap),
  /** LDAP test only: the person to sign in as (nothing is stored, no one is created). */
  username: Schema.optional(Schema.String.pipe(Schema.maxLength(256))),
  password: Schema.optional(Schema.String.pipe(Schema.maxLength(1024)))
}).annotations({ identifier: "ConnectionDraft" })
export type ConnectionDraftBody = typeof ConnectionDraftBody.Type

const nonEmpty = (secret: string) => (secret === "" ? undefined : Redacted.make(secret))

/** A draft is tried, so it must be complete whether or not it says `enabled`. */
const DRAFT_REQUIRED = "to try a draft"

/**
 * The draft OIDC connection to try, or every problem a save would name for the same settings (the
 * same check, `oidcProblems`) plus what a draft lacks to be tried.
 */
export const oidcDraftConnection = (
  draft: NonNullable<ConnectionDraftBody["oidc"]>,
  stored: StoredConnections
): UpstreamConnection | ReadonlyArray<string> => {
  const { client_secret, ...settings } = draft
  const same = sameOidcDestination(stored.settings.oidc, settings)
  const secret = client_secret === undefined ? (same ? stored.oidcClientSecret : undefined) : nonEmpty(client_secret)
  const missingSecret =
    secret !== undefined
      ? undefined
      : same || client_secret !== undefined
        ? "oidc.client_secret: required (none is stored)"
        : "oidc.client_secret: required for a draft naming another issuer or client id than the stored connection"
  const problems = oidcProblems(settings, { required: DRAFT_REQUIRED, missingSecret })
  if (problems.length > 0 || settings.issuer === undefined || settings.client_id === undefined || secret === undefined)
    return problems
  return oidcConnectionOf({ ...settings, issuer: settings.issuer, client_id: settings.client_id }, secret)
}

/** A complete OIDC connection setting as sign-in uses it. */
export const oidcConnectionOf = (
  oidc: OidcSettings & { readonly issuer: string; readonly client_id: string },
  secret: Redacted.Redacted<string>
): UpstreamConnection => ({
  ...connectionOf({ ...oidc, protocol: "oidc", client_secret_env: "" }, secret, oidc.ca_pem),
  namespace: oidcNamespace(oidc)
})

/**
 * A stored LDAP connection as sign-in uses it (`LdapSettings`, src/identity/ldap/settings.ts), with its
 * opened bind password; or the first thing it lacks. An enabled stored connection is complete (the save
 * checked it); a draft is checked by `ldapDraftSettings` first.
 */
export const ldapSettingsOf = (
  ldap: LdapSettingsFields,
  bindPassword: Redacted.Redacted<string> | undefined
): LdapSettings | string => {
  const missing = LDAP_REQUIRED.find((key) => ldap[key] === undefined)
  if (missing !== undefined) return `ldap.${missing}: required`
  if (bindPassword === undefined) return "ldap.bind_password: required (none is stored)"
  const { enabled: _enabled, ...given } = ldap
  return {
    ...given,
    url: ldap.url ?? "",
    bind_dn: ldap.bind_dn ?? "",
    bind_password: bindPassword,
    user_search_base: ldap.user_search_base ?? "",
    user_search_filter: ldap.user_search_filter ?? "",
    user_id_attribute: ldap.user_id_attribute ?? "",
    user_name_attribute: ldap.user_name_attribute ?? ""
  }
}

/**
 * The draft LDAP connection to try (without `bind_password` the stored one is used), or every problem
 * a save would name for the same settings (the same check, `ldapProblems`) plus what a draft lacks.
 */
export const ldapDraftSettings = (
  draft: NonNullable<ConnectionDraftBody["ldap"]>,
  stored: StoredConnections
): LdapSettings | ReadonlyArray<string> => {
  const { bind_password, ...settings } = draft
  const same = sameLdapDestination(stored.settings.ldap, settings)
  if (bind_password === undefined && !same) {
    return ["ldap.bind_password: required for a draft naming another address or bind DN than the stored connection"]
  }
  const password = bind_password === undefined ? stored.ldapBindPassword : nonEmpty(bind_password)
  const problems = ldapProblems(
    settings,
    {
      required: DRAFT_REQUIRED,
      missingSecret: password === undefined ? "ldap.bind_password: required (none is stored)" : undefined
    },
    password
  )
  if (problems.length > 0) return problems
  const complete = ldapSettingsOf(settings, password)
  return typeof complete === "string" ? [complete] : complete
}
