import { isRecord } from "../../json.js"

/**
 * Exposed names (docs/mcp.md, "Naming"). Tools and prompts are `<backend_id>__<original>`; resource URIs
 * and templates are `gateway://<backend_id>/<original URI>`. Backend ids never contain `__` nor end in
 * `_` (config schema), so the first `__` always ends the id: two (backend, name) pairs never expose the
 * same name, and policy keeps referring to the original name plus the backend id.
 */

export const separator = "__"
export const resourceScheme = "gateway://"

/** MCP tool-name rules (SEP-986): 1-128 characters from letters, digits, `_`, `-` and `.`. */
const toolName = /^[A-Za-z0-9_.-]{1,128}$/

/** The exposed name, or undefined when the result would break the MCP name rules (the tool is then not exposed). */
export const exposeName = (backendId: string, original: string): string | undefined => {
  const exposed = `${backendId}${separator}${original}`
  return toolName.test(exposed) ? exposed : undefined
}

export const exposeUri = (backendId: string, original: string): string => `${resourceScheme}${backendId}/${original}`

/** Splits an exposed URI back into backend id and original URI; undefined when it is not one of ours. */
export const parseExposedUri = (uri: string): { readonly backendId: string; readonly original: string } | undefined => {
  if (!uri.startsWith(resourceScheme)) return undefined
  const slash = uri.indexOf("/", resourceScheme.length)
  if (slash <= resourceScheme.length) return undefined
  return { backendId: uri.slice(resourceScheme.length, slash), original: uri.slice(slash + 1) }
}

/**
 * A backend URI (the part after `gateway://<backend>/`) the gateway will not forward: one whose meaning
 * could change on the way — a `.` or `..` path segment, a backslash, a percent-encoded dot, slash or
 * backslash, or a control character — or an empty one. A backend might resolve such a URI against
 * something the caller was never shown.
 */
export const isAmbiguousUri = (original: string): boolean =>
  original === "" ||
  hasControlOrBackslash(original) ||
  /%(2e|2f|5c)/i.test(original) ||
  original.split("/").some((segment) => segment === "." || segment === "..")

const hasControlOrBackslash = (text: string): boolean => {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x20 || code === 0x7f || code === 0x5c) return true
  }
  return false
}

const exposeBlock = (backendId: string, block: unknown): unknown => {
  if (!isRecord(block)) return block
  if (block["type"] === "resource_link" && typeof block["uri"] === "string") {
    return { ...block, uri: exposeUri(backendId, block["uri"]) }
  }
  const resource = block["resource"]
  if (block["type"] === "resource" && isRecord(resource) && typeof resource["uri"] === "string") {
    return { ...block, resource: { ...resource, uri: exposeUri(backendId, resource["uri"]) } }
  }
  return block
}

/**
 * Content a backend returned (a tool result's `content`, a prompt message's `content`) with the URIs of
 * resource links and embedded resources in their exposed form, so a client can read them through the
 * gateway. Other blocks, and URIs inside text, are left as they are.
 */
export const exposeContentUris = <T>(backendId: string, content: T): T =>
  (Array.isArray(content)
    ? content.map((block) => exposeBlock(backendId, block))
    : exposeBlock(backendId, content)) as T
