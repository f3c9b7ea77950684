import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { jwksPath } from "../http/jwks.js"
import { authSettings } from "./settings.js"

/**
 * RFC 8414 authorization server metadata. Served at both well-known paths (`/.well-known/
 * oauth-authorization-server/sso` and `/.well-known/openid-configuration/sso`) with the same content:
 * the OpenID path exists for clients that only look there; no ID tokens are issued (no `openid` scope).
 */
export const metadataDocument = Effect.map(authSettings, (settings) => ({
  issuer: settings.issuer,
  authorization_endpoint: `${settings.issuer}/authorize`,
  token_endpoint: `${settings.issuer}/token`,
  jwks_uri: `${settings.origin}${jwksPath}`,
  response_types_supported: ["code"],
  response_modes_supported: ["query"],
  grant_types_supported: ["authorization_code", "refresh_token"],
  code_challenge_methods_supported: ["S256"],
  token_endpoint_auth_methods_supported: ["none"],
  authorization_response_iss_parameter_supported: true,
  scopes_supported: settings.scopesSupported,
  prompt_values_supported: ["none", "login", "consent"]
}))

export const metadataEndpoint = Effect.map(metadataDocument, (document) =>
  HttpServerResponse.unsafeJson(document, { headers: { "cache-control": "public, max-age=300" } })
)
