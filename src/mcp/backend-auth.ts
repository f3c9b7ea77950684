import type { AuthProvider } from "@modelcontextprotocol/client"
import { Redacted } from "effect"
import type { BackendConfig } from "../config/schema.js"
import { clientCredentials } from "./backend-oauth.js"

/**
 * What a backend receives on every request: its fixed headers and its own credentials, nothing from
 * the caller. The MCP client's bearer token and any upstream identity token never get here, because
 * backend connections are built from configuration only and shared by every caller.
 */
export interface BackendRequestAuth {
  readonly headers: Readonly<Record<string, string>>
  readonly authProvider: AuthProvider | undefined
}

export const backendRequestAuth = (backend: BackendConfig): BackendRequestAuth => {
  const headers: Record<string, string> = { ...backend.headers }
  const credentials = backend.credentials
  if (credentials?.type === "basic") {
    const pair = `${credentials.username}:${Redacted.value(credentials.password)}`
    headers["authorization"] = `Basic ${Buffer.from(pair).toString("base64")}`
  }
  if (credentials?.type === "bearer") {
    const token = Redacted.value(credentials.token)
    return { headers, authProvider: { token: async () => token } }
  }
  if (backend.oauth !== undefined) return { headers, authProvider: clientCredentials(backend.oauth) }
  return { headers, authProvider: undefined }
}
