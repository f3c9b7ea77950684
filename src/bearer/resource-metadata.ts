import type { GatewayConfig } from "../config/schema.js"
import { type ComposedSources, endpointScopes } from "../sources/schema.js"

/**
 * RFC 9728 protected resource metadata for `server.public_url` (docs/mcp.md, "Tokens").
 * The path-aware address inserts the resource's path after the well-known prefix; the root alias
 * serves the same document for clients that only know the origin.
 */
export const metadataPrefix = "/.well-known/oauth-protected-resource"

/** The path of the MCP endpoint: `server.public_url` without its origin (`/` when it has no path). */
export const mcpPath = (publicUrl: string): string => new URL(publicUrl).pathname

export const metadataPath = (publicUrl: string): string => {
  const path = mcpPath(publicUrl)
  return path === "/" ? metadataPrefix : `${metadataPrefix}${path}`
}

/** The address put into every `WWW-Authenticate` challenge's `resource_metadata`. */
export const metadataUrl = (publicUrl: string): string => `${new URL(publicUrl).origin}${metadataPath(publicUrl)}`

export interface ProtectedResourceMetadata {
  readonly resource: string
  readonly authorization_servers: ReadonlyArray<string>
  readonly scopes_supported?: ReadonlyArray<string>
  readonly bearer_methods_supported: ReadonlyArray<"header">
}

/**
 * Four fields (docs/mcp.md, "Tokens"); `scopes_supported` is the union of the endpoints' required
 * scopes (backends, and the HTTP endpoints and tool groups of `sources`), omitted when there is none (RFC 9728 makes it optional; an empty list would tell a client
 * that no scope exists, rather than that none is needed).
 */
export const protectedResourceMetadata = (
  config: GatewayConfig,
  sources?: ComposedSources
): ProtectedResourceMetadata => {
  const scopes = [...new Set(endpointScopes(config.backends, sources))].sort()
  return {
    resource: config.server.public_url,
    authorization_servers: [config.auth.issuer],
    ...(scopes.length === 0 ? {} : { scopes_supported: scopes }),
    bearer_methods_supported: ["header"]
  }
}
