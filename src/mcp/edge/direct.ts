import type { IncomingHttpHeaders } from "node:http"
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS
} from "@modelcontextprotocol/server"
import { isRecord } from "../../json.js"

/**
 * Requests the gateway answers itself on /mcp's hot path (docs/mcp.md, "How a request travels"):
 * `tools/call` and `tools/list`, without building an MCP server and client per request.
 *
 * A request qualifies only when every detail is one this module checks itself — a 2026-07-28 request
 * with a well-formed envelope and standard headers that mirror the body exactly, or a 2025-era request
 * with no envelope, a supported (or no) `MCP-Protocol-Version`, no 2026 headers and an `Accept` that takes
 * JSON and SSE — and params of the MCP specification's shape with no key it does not know. Anything else, valid or
 * not, goes to the MCP SDK's handler, which
 * stays the one place that decides how a malformed or unusual request is answered; so both paths give
 * the same answer to the same request.
 */
export interface DirectRequest {
  /** `modern`: a 2026-07-28 request; `legacy`: a 2025-era one (no envelope), as served statelessly. */
  readonly era: "modern" | "legacy"
  readonly id: string | number
  readonly params: Record<string, unknown>
  readonly progressToken: string | number | undefined
}

const reservedPrefix = "io.modelcontextprotocol/"
const envelopeKeys: ReadonlySet<string> = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY
])
const requestKeys: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"])

const onlyKeys = (value: Record<string, unknown>, allowed: ReadonlySet<string>) => {
  for (const key in value) if (!allowed.has(key)) return false
  return true
}

const isRequestId = (value: unknown): value is string | number =>
  typeof value === "string" || Number.isSafeInteger(value)

const isImplementation = (value: unknown) =>
  isRecord(value) && typeof value["name"] === "string" && typeof value["version"] === "string"

/**
 * The request, when it is a `method` request this path answers. `paramKeys`: the params it may carry
 * (besides `_meta`); `name`: the value `Mcp-Name` must mirror, undefined when the header must be absent,
 * false when the request is not one for this path.
 */
export const directRequest = (
  message: unknown,
  headers: IncomingHttpHeaders,
  method: string,
  paramKeys: ReadonlySet<string>,
  name: (params: Record<string, unknown>) => string | undefined | false,
  /** The 2026-era revisions the MCP SDK serves (src/mcp/edge/sdk-profile.ts). */
  modernRevisions: ReadonlySet<string>
): DirectRequest | undefined => {
  if (!isRecord(message) || !onlyKeys(message, requestKeys)) return undefined
  const { id } = message
  // Without `params` (2025-era clients send `tools/list` so): as `params: {}`; the 2026 envelope needs params.
  const params = message["params"] === undefined ? {} : message["params"]
  if (message["jsonrpc"] !== "2.0" || message["method"] !== method || !isRequestId(id)) return undefined
  if (!isRecord(params)) return undefined
  for (const key in params) if (key !== "_meta" && !paramKeys.has(key)) return undefined
  const meta = params["_meta"]
  if (meta !== undefined && !isRecord(meta)) return undefined
  if (meta === undefined || !(PROTOCOL_VERSION_META_KEY in meta)) return legacyRequest(id, params, meta, headers)
  const revision = meta[PROTOCOL_VERSION_META_KEY]
  if (typeof revision !== "string" || !modernRevisions.has(revision)) return undefined
  if (!isRecord(meta[CLIENT_CAPABILITIES_META_KEY])) return undefined
  const info = meta[CLIENT_INFO_META_KEY]
  if (info !== undefined && !isImplementation(info)) return undefined
  for (const key in meta) if (key.startsWith(reservedPrefix) && !envelopeKeys.has(key)) return undefined
  const progressToken = meta["progressToken"]
  if (progressToken !== undefined && !isRequestId(progressToken)) return undefined
  if (headers["mcp-protocol-version"] !== revision || headers["mcp-method"] !== method) return undefined
  const mirrored = name(params)
  if (mirrored === false || headers["mcp-name"] !== mirrored) return undefined
  return { era: "modern", id, params, progressToken }
}

const legacyRevisions: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS)

/** The 2025-era half: what the SDK's stateless fallback serves without complaint, and nothing more. */
const legacyRequest = (
  id: string | number,
  params: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  headers: IncomingHttpHeaders
): DirectRequest | undefined => {
  let progressToken: string | number | undefined
  if (meta !== undefined) {
    for (const key in meta) if (key !== "progressToken") return undefined
    const token = meta["progressToken"]
    if (token !== undefined && !isRequestId(token)) return undefined
    progressToken = token
  }
  const version = headers["mcp-protocol-version"]
  if (version !== undefined && (typeof version !== "string" || !legacyRevisions.has(version))) return undefined
  if (headers["mcp-method"] !== undefined || headers["mcp-name"] !== undefined) return undefined
  // The SDK's stateless transport answers 406 unless the client takes both (the same substring test).
  const accept = headers.accept ?? ""
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return undefined
  return { era: "legacy", id, params, progressToken }
}
