import type { BackendConfig } from "../../config/schema.js"
import { isRecord } from "../../json.js"

/**
 * Exposed names (docs/mcp.md, "Naming"). By default tools and prompts are `<backend_id>__<original>`
 * and resource URIs and templates `gateway://<backend_id>/<original URI>`. Backend ids never contain
 * `__` nor end in `_` (config schema), so the first `__` always ends the id and two (backend, name) pairs
 * never expose the same name. A backend's `naming` may set another prefix (distinct per backend), an
 * empty one, or its original URIs; then names can collide, and a name two backends expose is exposed by
 * neither (src/mcp/catalog/index.ts). Policy always refers to the original name plus the backend id.
 */

export const separator = "__"
export const resourceScheme = "gateway://"

/** How one backend's names are exposed: derived from its configuration. */
export interface Naming {
  readonly backendId: string
  readonly prefix: string
  readonly originalUris: boolean
}

const namings = new WeakMap<object, Naming>()

/** The naming of a backend, an HTTP endpoint or a tool group (every kind has `id` and `naming`). */
export const namingOf = (config: Pick<BackendConfig, "id" | "naming">): Naming => {
  let naming = namings.get(config)
  if (naming === undefined) {
    naming = {
      backendId: config.id,
      prefix: config.naming.prefix ?? `${config.id}${separator}`,
      originalUris: config.naming.resource_uris === "original"
    }
    namings.set(config, naming)
  }
  return naming
}

/** MCP tool-name rules (SEP-986): 1-128 characters from letters, digits, `_`, `-` and `.`. */
const toolName = /^[A-Za-z0-9_.-]{1,128}$/

/** The exposed name, or undefined when the result would break the MCP name rules (the tool is then not exposed). */
export const exposeName = (naming: Naming, original: string): string | undefined => {
  // An empty name would be exposed as the bare prefix (`crm__`), naming nothing the backend has.
  if (original === "") return undefined
  const exposed = `${naming.prefix}${original}`
  return toolName.test(exposed) ? exposed : undefined
}

export const exposeUri = (naming: Naming, original: string): string =>
  naming.originalUris ? original : `${resourceScheme}${naming.backendId}/${original}`

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

const exposeBlock = (naming: Naming, block: unknown): unknown => {
  if (!isRecord(block)) return block
  if (block["type"] === "resource_link" && typeof block["uri"] === "string") {
    return { ...block, uri: exposeUri(naming, block["uri"]) }
  }
  const resource = block["resource"]
  if (block["type"] === "resource" && isRecord(resource) && typeof resource["uri"] === "string") {
    return { ...block, resource: { ...resource, uri: exposeUri(naming, resource["uri"]) } }
  }
  return block
}

/**
 * Content a backend returned (a tool result's `content`, a prompt message's `content`) with the URIs of
 * resource links and embedded resources in their exposed form, so a client can read them through the
 * gateway. Other blocks, and URIs inside text, are left as they are.
 */
export const exposeContentUris = <T>(naming: Naming, content: T): T =>
  (naming.originalUris
    ? content
    : Array.isArray(content)
      ? content.map((block) => exposeBlock(naming, block))
      : exposeBlock(naming, content)) as T
