import type { BackendConfig } from "../config/schema.js"
import { sha256Hex } from "../crypto/hashing.js"
import type { ExposedTool } from "../mcp/catalog/index.js"
import { canonicalJson } from "./intent.js"

/**
 * The configuration an approval was given under: the backend (id and URL) and the tool with its rule
 * (write flag and approval policy). While it is unchanged — across restarts and reloads — the status
 * tool shows cached results and may ask the status tool; once it changes, both are withheld and a resume
 * is refused (docs/approvals.md, "Configuration changes").
 */
export const sourceHashOf = (backend: BackendConfig, tool: Pick<ExposedTool, "original" | "write" | "approval">) =>
  sha256Hex(
    canonicalJson({
      backend: backend.id,
      url: backend.url,
      tool: tool.original,
      write: tool.write,
      approval: tool.approval ?? null
    })
  )
