import { createRequire } from "node:module"
import type * as Ldapts from "ldapts"

const require = createRequire(import.meta.url)
let loaded: typeof Ldapts | undefined

/**
 * The LDAP client library, loaded at its first use: it weighs about 14 MB of memory, which a gateway
 * without an LDAP connection never pays (docs/benchmarks.md, idle RSS). Every use of ldapts goes
 * through here, so its classes (`instanceof ResultCodeError`) are always the same ones.
 */
export const ldapts = (): typeof Ldapts => {
  loaded ??= require("ldapts") as typeof Ldapts
  return loaded
}
