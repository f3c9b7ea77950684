import type { AuthProvider } from "@modelcontextprotocol/client"
import { Redacted } from "effect"
import type { BackendConfig } from "../../config/schema.js"
import { clientCredentials } from "./oauth.js"

/** A backend's bearer token: fetched (and cached) on demand; `invalidate` after the backend answered 401. */
export interface TokenSource {
  readonly token: () => Promise<string>
  readonly invalidate?: () => void
}

/**
 * What a backend receives on every request: its fixed headers and its own credentials, nothing from
 * the caller. The MCP client's bearer token and any upstream identity token never get here, because
 * backend connections are built from configuration only and shared by every caller.
 */
export interface BackendRequestAuth {
  readonly headers: Readonly<Record<string, string>>
  readonly tokens: TokenSource | undefined
}

const basic = (username: string, password: string) =>
  `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`

/**
 * `now`: the generation's clock (Effect's `Clock`), which token expiry is measured on. Header names
 * come out in lower case, so a configured `Authorization` is one header whatever its case. Credentials
 * in the backend's URL are sent as node:http sends them: Basic, unless an Authorization header is
 * configured or a bearer token (`credentials.type: bearer`, `oauth`) is sent.
 */
export const backendRequestAuth = (backend: BackendConfig, now: () => number): BackendRequestAuth => {
  const headers: Record<string, string> = Object.fromEntries(
    Object.entries(backend.headers).map(([name, value]) => [name.toLowerCase(), value])
  )
  const credentials = backend.credentials
  if (credentials?.type === "basic") {
    headers["authorization"] = basic(credentials.username, Redacted.value(credentials.password))
  }
  if (credentials?.type === "bearer") {
    const token = Redacted.value(credentials.token)
    return { headers, tokens: { token: async () => token } }
  }
  if (backend.oauth !== undefined) return { headers, tokens: clientCredentials(backend.oauth, now) }
  const url = new URL(backend.url)
  if (headers["authorization"] === undefined && (url.username !== "" || url.password !== "")) {
    headers["authorization"] = basic(decodeURIComponent(url.username), decodeURIComponent(url.password))
  }
  return { headers, tokens: undefined }
}

/**
 * Whether the gateway can renew the backend's credentials (OAuth client credentials): only then is a
 * request refused with 401 sent again with a fresh token, and only then can a second 401 mean a lost
 * session (src/mcp/upstream/lost-session.ts). The same test as a TokenSource with `invalidate`.
 */
export const renewsCredentials = (backend: BackendConfig): boolean => backend.oauth !== undefined

/** The same token source as the MCP client SDK's transport wants it. */
export const asAuthProvider = (tokens: TokenSource): AuthProvider => {
  const invalidate = tokens.invalidate
  return invalidate === undefined
    ? { token: tokens.token }
    : {
        token: tokens.token,
        onUnauthorized: async () => invalidate()
      }
}
