import type { GatewayConfig } from "../config/schema.js"

/**
 * The admin origin, which is also the Management API's resource indicator (RFC 8707): in
 * `admin.mode: local` the admin listener's own, `http://<admin.listen>` (loopback only); in `remote`
 * the origin of `admin.public_url`, where the HTTPS proxy in front of the admin listener answers.
 * Tokens for the API and the console carry it as their audience; the CLI client that obtains them lists
 * it in `resources`, and browsers may drive the API and the console only from it
 * (docs/management-api.md, "Where it listens").
 */
export const adminResource = (config: Pick<GatewayConfig, "admin">): string =>
  config.admin.mode === "remote" && config.admin.public_url !== undefined
    ? new URL(config.admin.public_url).origin
    : `http://${config.admin.listen}`

/** Where the API's protected-resource metadata would live; named in its 401 challenges. */
export const adminResourceMetadata = (config: Pick<GatewayConfig, "admin">): string =>
  `${adminResource(config)}/.well-known/oauth-protected-resource`

/** Where the console's sign-in comes back (docs/console.md): register it in the `admin.client_id` client. */
export const consoleRedirectUri = (config: Pick<GatewayConfig, "admin">): string =>
  `${adminResource(config)}/console/callback`
