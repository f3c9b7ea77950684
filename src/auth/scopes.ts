import type { GatewayConfig } from "../config/schema.js"
import { roleScopeNames, roleScopesOf } from "../policy/roles.js"
import { type ComposedSources, endpointScopes } from "../sources/schema.js"

/** Enables refresh tokens (docs/authorization-server.md, "Scopes"). */
export const OFFLINE_ACCESS = "offline_access"

/** RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

/**
 * The scopes this authorization server knows: `offline_access`, the administrative scopes of the
 * roles (src/policy/roles.ts) and every endpoint's required scopes (backends, and the HTTP endpoints and
 * tool groups of `sources`). Published as `scopes_supported`.
 * Knowing a scope is not holding it: a token carries only the requested scopes its person holds
 * (`grantableScope`, src/auth/held-scopes.ts).
 */
export const scopesSupported = (config: GatewayConfig, sources?: ComposedSources): ReadonlyArray<string> => {
  const named = [OFFLINE_ACCESS, ...roleScopeNames(roleScopesOf(config)), ...endpointScopes(config.backends, sources)]
  return [...new Set(named)]
}

export type ParsedScope =
  | { readonly _tag: "Scope"; readonly granted: ReadonlyArray<string> }
  | { readonly _tag: "Malformed" }

/**
 * The requested scopes this server knows, in request order and without repeats: the first narrowing,
 * before the person is known (held scopes narrow further). Unknown scopes are left out rather than
 * refused (RFC 6749 §3.3 lets the server grant less); the token response says what was granted.
 * Malformed text is refused.
 */
export const grantScope = (requested: string | undefined, supported: ReadonlyArray<string>): ParsedScope => {
  if (requested === undefined) return { _tag: "Scope", granted: [] }
  const tokens = requested.split(" ").filter((token) => token !== "")
  if (tokens.length === 0 || !tokens.every((token) => SCOPE_TOKEN.test(token))) return { _tag: "Malformed" }
  const known = new Set(supported)
  return { _tag: "Scope", granted: [...new Set(tokens)].filter((token) => known.has(token)) }
}

export const scopeText = (scope: ReadonlyArray<string>): string => scope.join(" ")

export const parseScopeText = (text: string): ReadonlyArray<string> => text.split(" ").filter((token) => token !== "")
