import type { Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from "@modelcontextprotocol/client"

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
  const entries = Object.entries(meta).filter(([key]) => !key.startsWith(reservedMetaPrefix))
  const { _meta: _, ...rest } = value
  return (entries.length === 0 ? rest : { ...rest, _meta: Object.fromEntries(entries) }) as T
}

/** The `Mcp-Param-*` headers a tool's input schema declares (SEP-2243), for the CORS allow-list. */
export const declaredParamHeaders = (tool: Tool): ReadonlyArray<string> => {
  const names: Array<string> = []
  const visit = (schema: unknown) => {
    if (schema === null || typeof schema !== "object") return
    const { properties } = schema as { readonly properties?: unknown }
    if (properties === null || typeof properties !== "object") return
    for (const child of Object.values(properties as Record<string, unknown>)) {
      const header = (child as { readonly "x-mcp-header"?: unknown } | null)?.["x-mcp-header"]
      if (typeof header === "string" && header !== "") names.push(`Mcp-Param-${header}`)
      visit(child)
    }
  }
  visit(tool.inputSchema)
  return names
}
