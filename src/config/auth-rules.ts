import { Redacted } from "effect"
import { adminResource } from "../admin/resource.js"
import { registeredRedirectUriProblem } from "../auth/redirect-uri.js"
import { requireHttps } from "./address.js"
import { type Rule, rule, when } from "./cross-field-rule.js"
import { problem } from "./problem.js"
import type { ConfigProblem } from "./service.js"

/** Builtin mode: `auth.issuer` must equal the MCP origin plus `/sso` (docs/configuration.md, `auth`). */
export const issuerMatchesPublicUrl = rule("issuerMatchesPublicUrl", ["auth", "server"], ({ auth, server }) => {
  const origin = URL.parse(server.public_url)?.origin
  if (auth.mode !== "builtin" || origin === undefined) return []
  const expected = `${origin}/sso`
  return when(
    "auth.issuer",
    auth.issuer === expected ? undefined : `must be "${expected}" (origin of server.public_url + /sso)`
  )
})

export const externalModeConfigured = rule("externalModeConfigured", ["auth"], ({ auth }) => {
  if (auth.mode !== "external") return []
  if (auth.external === undefined) return [problem("auth.external", "is required when auth.mode is external")]
  return when("auth.external.jwks_url", requireHttps(auth.external.jwks_url))
})

const paired = (base: string, [a, b]: readonly [string, string], values: readonly [unknown, unknown]) =>
  (values[0] === undefined) === (values[1] === undefined)
    ? []
    : [problem(`${base}.${values[0] === undefined ? a : b}`, `${a} and ${b} must be set together`)]

/** tenant_claim / tenant_value are required together; the success pair works the same way. */
export const upstreamClaimsPaired = rule("upstreamClaimsPaired", ["auth"], ({ auth }) => {
  const upstream = auth.sso.upstream
  if (upstream === undefined) return []
  return [
    ...paired("auth.sso.upstream", ["tenant_claim", "tenant_value"], [upstream.tenant_claim, upstream.tenant_value]),
    ...paired("auth.sso.upstream", ["success_claim", "success_value"], [upstream.success_claim, upstream.success_value])
  ]
})

const endpoints = ["authorization_url", "token_url", "userinfo_url"] as const

/** OAuth2 UserInfo has no discovery, so its endpoints and the subject path must be written down. */
export const oauth2UpstreamComplete = rule("oauth2UpstreamComplete", ["auth"], ({ auth }) => {
  const upstream = auth.sso.upstream
  if (upstream?.protocol !== "oauth2") return []
  return [...endpoints, "subject_claim" as const].flatMap((key) =>
    upstream[key] === undefined ? [problem(`auth.sso.upstream.${key}`, "is required when protocol is oauth2")] : []
  )
})

export const upstreamSecure = rule("upstreamSecure", ["auth"], ({ auth }) => {
  const upstream = auth.sso.upstream
  if (upstream === undefined) return []
  return [
    ...when("auth.sso.upstream.issuer", requireHttps(upstream.issuer)),
    ...endpoints.flatMap((key): ReadonlyArray<ConfigProblem> => {
      const url = upstream[key]
      return url === undefined ? [] : when(`auth.sso.upstream.${key}`, requireHttps(url))
    })
  ]
})

export const ssoClientIdsUnique = rule("ssoClientIdsUnique", ["auth"], ({ auth }) => {
  const seen = new Set<string>()
  return auth.sso.clients.flatMap((client, index) => {
    if (seen.has(client.id)) return [problem(`auth.sso.clients[${index}].id`, `duplicate client id "${client.id}"`)]
    seen.add(client.id)
    return []
  })
})

/**
 * Client redirect URIs: no wildcards or fragments; plain http only on loopback (RFC 8252;
 * docs/authorization-server.md).
 */
export const ssoRedirectUrisValid = rule("ssoRedirectUrisValid", ["auth"], ({ auth }) =>
  auth.sso.clients.flatMap((client, index) =>
    client.redirect_uris.flatMap((uri, position) =>
      when(`auth.sso.clients[${index}].redirect_uris[${position}]`, registeredRedirectUriProblem(uri))
    )
  )
)

/**
 * A client's resources are the gateway's own (RFC 8707): `server.public_url` for /mcp, the Management
 * API's resource for `admin-login`. A token for anything else would be refused everywhere, so such a
 * resource is a mistake, most often a port or host changed in one place and not the other.
 */
export const ssoClientResourcesKnown = rule("ssoClientResourcesKnown", ["auth", "server", "admin"], (config) => {
  if (config.auth.mode !== "builtin") return []
  const known = [config.server.public_url, adminResource(config)]
  const listed = `server.public_url "${config.server.public_url}" or the admin resource "${adminResource(config)}" (${config.admin.mode === "remote" ? "the origin of admin.public_url" : "admin.listen"})`
  return config.auth.sso.clients.flatMap((client, index) =>
    client.resources.flatMap((resource, position) =>
      when(
        `auth.sso.clients[${index}].resources[${position}]`,
        known.includes(resource) ? undefined : `"${resource}" is not a resource of this gateway: use ${listed}`
      )
    )
  )
})

/** The consent portal signs in as one of the downstream clients of the built-in server. */
export const clientAuthorizationClientRegistered = rule(
  "clientAuthorizationClientRegistered",
  ["auth", "client_authorization"],
  ({ auth, client_authorization }) => {
    const clientId = client_authorization.client_id
    if (auth.mode !== "builtin" || !client_authorization.enabled || clientId === undefined) return []
    return auth.sso.clients.some((client) => client.id === clientId)
      ? []
      : [problem("client_authorization.client_id", `no client "${clientId}" in auth.sso.clients`)]
  }
)

/** Spec Limits: directory bearer secret at least 32 characters (code points, not UTF-16 units). */
export const directorySecretLength = rule("directorySecretLength", [], (_, secrets) => {
  const token = secrets.directoryToken
  if (token === undefined || [...Redacted.value(token)].length >= 32) return []
  return [
    problem("auth.sso.directory_token_env", "the directory secret in this variable must be at least 32 characters")
  ]
})

export const authRules: ReadonlyArray<Rule> = [
  issuerMatchesPublicUrl,
  externalModeConfigured,
  upstreamClaimsPaired,
  oauth2UpstreamComplete,
  upstreamSecure,
  ssoClientIdsUnique,
  ssoRedirectUrisValid,
  ssoClientResourcesKnown,
  clientAuthorizationClientRegistered,
  directorySecretLength
]
