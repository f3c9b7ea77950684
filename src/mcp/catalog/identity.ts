import { createHash } from "node:crypto"
import { Redacted } from "effect"
import type { BackendConfig } from "../../config/schema.js"

/**
 * The catalog-source identity (docs/mcp.md, "Backends", reload): id, URL, `allow_insecure_http`, every fixed header,
 * the complete credentials and the OAuth settings. Two configurations with the same identity talk to
 * the same server as the same principal, so one's catalog may stand in for the other's. `required`,
 * `required_scopes`, `tool_rules` and timeouts are deliberately left out. Hashed, so the map of
 * inheritable catalogs holds no secret.
 */
export const catalogIdentity = (backend: BackendConfig): string => {
  const credentials = backend.credentials
  const oauth = backend.oauth
  const material = [
    backend.id,
    backend.url,
    backend.allow_insecure_http,
    Object.entries(backend.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    credentials === undefined
      ? null
      : credentials.type === "bearer"
        ? ["bearer", Redacted.value(credentials.token)]
        : ["basic", credentials.username, Redacted.value(credentials.password)],
    oauth === undefined
      ? null
      : [oauth.type, oauth.issuer, oauth.client_id, Redacted.value(oauth.client_secret), [...oauth.scopes]]
  ]
  return createHash("sha256").update(JSON.stringify(material)).digest("base64url")
}
