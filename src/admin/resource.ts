import type { GatewayConfig } from "../config/schema.js"

/**
 * The Management API's address and resource indicator (RFC 8707): in `admin.mode: local` the admin
 * listener's origin, `http://<admin.listen>` (loopback only). Tokens for the API carry it as their
 * audience; the CLI client that obtains them lists it in `resources` (docs/management-api.md).
 */
export const adminResource = (config: Pick<GatewayConfig, "admin">): string => `http://${config.admin.listen}`

/** Where the API's protected-resource metadata would live; named in its 401 challenges. */
export const adminResourceMetadata = (config: Pick<GatewayConfig, "admin">): string =>
  `${adminResource(config)}/.well-known/oauth-protected-resource`
