import { createHash } from "node:crypto"
import { namespaceOf } from "../upstream/connection.js"
import type { LdapSettingsFields, OidcSettings } from "./settings.js"

/** The identity namespace of a stored OIDC connection (the same rule as `auth.sso.upstream`'s). */
export const oidcNamespace = (oidc: OidcSettings): string =>
  namespaceOf({
    protocol: "oidc",
    issuer: oidc.issuer ?? "",
    client_id: oidc.client_id ?? "",
    subject_claim: undefined,
    tenant_claim: oidc.tenant_claim,
    tenant_value: oidc.tenant_value
  })

/**
 * The identity namespace of an LDAP connection: the directory's address, where and how people and
 * groups are searched, and which attributes hold their stable ids. Changing any of them starts a
 * namespace whose users inherit nothing (docs/enterprise-sign-in.md, "Identities").
 */
export const ldapNamespace = (ldap: LdapSettingsFields): string =>
  `ldap:${createHash("sha256")
    .update(
      JSON.stringify([
        ldap.url ?? null,
        ldap.user_search_base ?? null,
        ldap.user_search_filter ?? null,
        ldap.user_id_attribute ?? null,
        ldap.group_search_base ?? null,
        ldap.group_search_filter ?? null,
        ldap.group_id_attribute ?? null
      ])
    )
    .digest("hex")
    .slice(0, 32)}`
