import type { BackendConfig } from "../config/schema.js"
import { sha256Hex } from "../crypto/hashing.js"
import type { ExposedTool } from "../mcp/catalog/index.js"
import { canonicalJson } from "./intent.js"

/**
 * The configuration an approval was given under: the backend — its id, URL, transport and naming, the
 * names of its fixed headers, who it authenticates as (credential type and user name, OAuth issuer,
 * client and scopes; never a secret's value), its required scopes — and the tool with its rule (write
 * flag and approval policy). Timeouts and `required` are left out. While it is unchanged — across
 * restarts and reloads — the status tool shows cached results and may ask the status tool; once it
 * changes, both are withheld and a resume is refused (docs/approvals.md, "Configuration changes").
 */
export const sourceHashOf = (backend: BackendConfig, tool: Pick<ExposedTool, "original" | "write" | "approval">) =>
  sha256Hex(
    canonicalJson({
      backend: backend.id,
      url: backend.url,
      allow_insecure_http: backend.allow_insecure_http,
      naming: backend.naming,
      headers: Object.keys(backend.headers).sort(),
      credentials:
        backend.credentials === undefined
          ? null
          : backend.credentials.type === "basic"
            ? { type: "basic", username: backend.credentials.username }
            : { type: backend.credentials.type },
      oauth:
        backend.oauth === undefined
          ? null
          : { issuer: backend.oauth.issuer, client_id: backend.oauth.client_id, scopes: backend.oauth.scopes },
      required_scopes: backend.required_scopes,
      tool: tool.original,
      write: tool.write,
      approval: tool.approval ?? null
    })
  )
