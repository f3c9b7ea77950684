import type { Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from "@modelcontextprotocol/client"
import { headerName } from "../../http/header-syntax.js"
import { putField } from "../../json.js"

/** What one backend offers, as fetched from it (every page of every list). */
export interface BackendCatalog {
  readonly tools: ReadonlyArray<Tool>
  readonly prompts: ReadonlyArray<Prompt>
  readonly resources: ReadonlyArray<Resource>
  readonly templates: ReadonlyArray<ResourceTemplate>
  /** The backend answers `completion/complete`. */
  readonly completions: boolean
}

const reservedMetaPrefix = "io.modelcontextprotocol/"

/**
 * A copy of `value` without the protocol's reserved `_meta` keys (server identity, envelope): those
 * describe the backend's own exchange and the gateway stamps its own.
 */
export const withoutReservedMeta = <T extends { readonly _meta?: unknown }>(value: T): T => {
  const meta = value._meta
  if (meta === undefined || meta === null || typeof meta !== "object") return value
  const kept = unreservedMeta(meta)
  const { _meta: _, ...rest } = value
  return (kept === undefined ? rest : { ...rest, _meta: kept }) as T
}

/** A `_meta` object's keys but the reserved ones, as a new object; undefined when none is left. */
export const unreservedMeta = (meta: object): Record<string, unknown> | undefined => {
  let kept: Record<string, unknown> | undefined
  for (const key of Object.keys(meta)) {
    if (key.startsWith(reservedMetaPrefix)) continue
    kept ??= {}
    putField(kept, key, (meta as Record<string, unknown>)[key])
  }
  return kept
}

/**
 * The `Mcp-Param-*` headers a tool's input schema declares (SEP-2243), for the CORS allow-list. Only
 * declarations that make a header name (RFC 9110 token characters) count: a backend's `X\r\nSet-Cookie`
 * made every preflight fail, and `a, Cookie` widened the allow-list to headers it never declared.
 */
export const declaredParamHeaders = (tool: Tool): ReadonlyArray<string> => {
  const names: Array<string> = []
  const visit = (schema: unknown) => {
    if (schema === null || typeof schema !== "object") return
    const { properties } = schema as { readonly properties?: unknown }
    if (properties === null || typeof properties !== "object") return
    for (const child of Object.values(properties as Record<string, unknown>)) {
      const header = (child as { readonly "x-mcp-header"?: unknown } | null)?.["x-mcp-header"]
      if (typeof header === "string" && headerName.test(`Mcp-Param-${header}`) && header !== "")
        names.push(`Mcp-Param-${header}`)
      visit(child)
    }
  }
  visit(tool.inputSchema)
  return names
}
