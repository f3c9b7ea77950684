import { sha256Hex } from "../../crypto/hashing.js"
import type { LdapSettings } from "./settings.js"

/** The settings that decide who a subject is; what the namespace is made of. */
export type LdapIdentityFields = Pick<
  LdapSettings,
  | "url"
  | "user_search_base"
  | "user_search_filter"
  | "user_id_attribute"
  | "group_search_base"
  | "group_search_filter"
  | "group_id_attribute"
>

/**
 * The identity namespace of a directory: `ldap:` and the SHA-256 (hex) of the settings that decide who a
 * subject is — the directory's address, where and how people and groups are searched, and which
 * attributes hold their stable ids. Changing any of them starts a new namespace, whose people inherit
 * nothing from the old one: the same subject may now be someone else. The display-name attributes,
 * the service account and the CA are left out: changing them changes nobody's identity, and a
 * namespace can be named without the service account's password (the stored settings never hold it).
 */
export const ldapNamespace = (settings: LdapIdentityFields): string =>
  `ldap:${sha256Hex(
    JSON.stringify([
      settings.url,
      settings.user_search_base,
      settings.user_search_filter,
      settings.user_id_attribute,
      settings.group_search_base ?? null,
      settings.group_search_filter ?? null,
      settings.group_id_attribute ?? null
    ])
  )}`
