import type { IncomingHttpHeaders } from "node:http"
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY
} from "@modelcontextprotocol/server"

/**
 * Requests the gateway answers itself on /mcp's hot path (docs/mcp.md, "How a request travels"):
 * `tools/call` and `tools/list`, without building an MCP server and client per request.
 *
 * A request qualifies only when every detail is one this module checks itself — a 2026-07-28 request
 * with a well-formed envelope, standard headers that mirror the body exactly, and params of the spec's
 * shape with no key it does not know. Anything else, valid or not, goes to the MCP SDK's handler, which
 * stays the one place that decides how a malformed or unusual request is answered; so both paths give
 * the same answer to the same request.
 */
export interface DirectRequest {
  readonly id: string | number
  readonly params: Record<string, unknown>
  readonly progressToken: string | number | undefined
}

/** The 2026-07-28 revision: the one modern revision the server SDK serves (its SUPPORTED_MODERN_PROTOCOL_VERSIONS). */
const directRevisions: ReadonlySet<string> = new Set(["2026-07-28"])
const reservedPrefix = "io.modelcontextprotocol/"
const envelopeKeys: ReadonlySet<string> = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY
])
const requestKeys: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"])

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const onlyKeys = (value: Record<string, unknown>, allowed: ReadonlySet<string>) => {
  for (const key in value) if (!allowed.has(key)) return false
  return true
}

const isRequestId = (value: unknown): value is string | number =>
  typeof value === "string" || Number.isSafeInteger(value)

/** A value a client sends as is in an `Mcp-Name` header (SEP-2243): printable ASCII, no surrounding space, no sentinel. */
export const plainHeaderValue = (value: string) =>
  value.length > 0 && value === value.trim() && /^[\t\x20-\x7e]*$/.test(value) && !value.startsWith("=?base64?")

const isImplementation = (value: unknown) =>
  isObject(value) && typeof value["name"] === "string" && typeof value["version"] === "string"

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
  name: (params: Record<string, unknown>) => string | undefined | false
): DirectRequest | undefined => {
  if (!isObject(message) || !onlyKeys(message, requestKeys)) return undefined
  const { id, params } = message
  if (message["jsonrpc"] !== "2.0" || message["method"] !== method || !isRequestId(id)) return undefined
  if (!isObject(params)) return undefined
  for (const key in params) if (key !== "_meta" && !paramKeys.has(key)) return undefined
  const meta = params["_meta"]
  if (!isObject(meta)) return undefined
  const revision = meta[PROTOCOL_VERSION_META_KEY]
  if (typeof revision !== "string" || !directRevisions.has(revision)) return undefined
  if (!isObject(meta[CLIENT_CAPABILITIES_META_KEY])) return undefined
  const info = meta[CLIENT_INFO_META_KEY]
  if (info !== undefined && !isImplementation(info)) return undefined
  for (const key in meta) if (key.startsWith(reservedPrefix) && !envelopeKeys.has(key)) return undefined
  const progressToken = meta["progressToken"]
  if (progressToken !== undefined && !isRequestId(progressToken)) return undefined
  if (headers["mcp-protocol-version"] !== revision || headers["mcp-method"] !== method) return undefined
  const mirrored = name(params)
  if (mirrored === false || headers["mcp-name"] !== mirrored) return undefined
  return { id, params, progressToken }
}
