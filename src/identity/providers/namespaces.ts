import { ldapNamespace as directoryNamespace } from "../ldap/namespace.js"
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
 * The identity namespace of a stored LDAP connection: the LDAP module's (`ldapNamespace` in
 * src/identity/ldap/namespace.ts), so the people a sign-in admits, the ones a directory snapshot lists
 * and the ones a replaced connection's save revokes are the same. Only an enabled connection is complete;
 * a draft's missing settings count as empty.
 */
export const ldapNamespace = (ldap: LdapSettingsFields): string =>
  directoryNamespace({
    url: ldap.url ?? "",
    user_search_base: ldap.user_search_base ?? "",
    user_search_filter: ldap.user_search_filter ?? "",
    user_id_attribute: ldap.user_id_attribute ?? "",
    group_search_base: ldap.group_search_base,
    group_search_filter: ldap.group_search_filter,
    group_id_attribute: ldap.group_id_attribute
  })
