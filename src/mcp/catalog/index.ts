import type { Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from "@modelcontextprotocol/client"
import type { ApprovalPolicy, BackendConfig } from "../../config/schema.js"
import { type BackendCatalog, declaredParamHeaders, withoutReservedMeta } from "./backend-catalog.js"
import { type GatewayTool, gatewayToolName } from "./gateway-tools.js"
import { exposeName, exposeUri } from "./naming.js"
import { publicationOf } from "./publication.js"

/** One exposed item: its exposed key (name or URI), which backend (config index) and its original key. */
export interface Entry<T> {
  readonly key: string
  readonly backend: number
  readonly original: string
  readonly item: T
}

export interface ExposedTool extends Entry<Tool> {
  readonly write: boolean
  /** Per-operation approval for calls of this write tool (`tool_rules[].approval`). */
  readonly approval: ApprovalPolicy | undefined
  /** The `Mcp-Param-*` headers its input schema declares (SEP-2243), which the MCP SDK's client builds. */
  readonly paramHeaders: ReadonlyArray<string>
  /** Set for a tool the gateway provides itself (its `backend` is then -1). */
  readonly gateway?: GatewayTool
}

/**
 * The aggregated catalog of a generation, precomputed whenever a backend's catalog changes so requests
 * only filter and slice: every list sorted by exposed key (stable cursors), every key indexed.
 * Unpublished tools are not in it at all; per-caller filtering (scopes) happens per request.
 */
export interface CatalogIndex {
  readonly backends: ReadonlyArray<BackendConfig>
  readonly tools: ReadonlyArray<ExposedTool>
  readonly toolByName: ReadonlyMap<string, ExposedTool>
  readonly prompts: ReadonlyArray<Entry<Prompt>>
  readonly promptByName: ReadonlyMap<string, Entry<Prompt>>
  readonly resources: ReadonlyArray<Entry<Resource>>
  readonly resourceByUri: ReadonlyMap<string, Entry<Resource>>
  readonly templates: ReadonlyArray<Entry<ResourceTemplate>>
  readonly templateByUri: ReadonlyMap<string, Entry<ResourceTemplate>>
  /** Per backend (config index): it answers completion/complete. */
  readonly completions: ReadonlyArray<boolean>
  /** Every `Mcp-Param-*` header a published tool declares. */
  readonly paramHeaders: ReadonlyArray<string>
}

export interface CatalogSource {
  readonly config: BackendConfig
  readonly catalog: BackendCatalog | undefined
}

const byKey = <T extends { readonly key: string }>(a: T, b: T) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
const indexBy = <T extends { readonly key: string }>(entries: ReadonlyArray<T>) =>
  new Map(entries.map((entry) => [entry.key, entry]))

/** Where gateway-provided tools sit: no backend. */
export const GATEWAY_BACKEND = -1

export const buildIndex = (
  sources: ReadonlyArray<CatalogSource>,
  gatewayTools: ReadonlyArray<GatewayTool> = []
): CatalogIndex => {
  const tools: Array<ExposedTool> = gatewayTools
    .filter((tool) => gatewayToolName.test(tool.definition.name))
    .map((tool) => ({
      key: tool.definition.name,
      backend: GATEWAY_BACKEND,
      original: tool.definition.name,
      item: tool.definition,
      write: false,
      approval: undefined,
      paramHeaders: [],
      gateway: tool
    }))
  const prompts: Array<Entry<Prompt>> = []
  const resources: Array<Entry<Resource>> = []
  const templates: Array<Entry<ResourceTemplate>> = []
  sources.forEach(({ config, catalog }, backend) => {
    if (catalog === undefined) return
    const publication = publicationOf(config)
    for (const tool of catalog.tools) {
      const decision = publication(tool.name)
      const key = exposeName(config.id, tool.name)
      if (!decision.published || key === undefined) continue
      const item = { ...withoutReservedMeta(tool), name: key }
      tools.push({
        key,
        backend,
        original: tool.name,
        write: decision.write,
        approval: decision.approval,
        paramHeaders: declaredParamHeaders(item),
        item
      })
    }
    for (const prompt of catalog.prompts) {
      const key = exposeName(config.id, prompt.name)
      if (key !== undefined)
        prompts.push({ key, backend, original: prompt.name, item: { ...withoutReservedMeta(prompt), name: key } })
    }
    for (const resource of catalog.resources) {
      const key = exposeUri(config.id, resource.uri)
      resources.push({ key, backend, original: resource.uri, item: { ...withoutReservedMeta(resource), uri: key } })
    }
    for (const template of catalog.templates) {
      const key = exposeUri(config.id, template.uriTemplate)
      templates.push({
        key,
        backend,
        original: template.uriTemplate,
        item: { ...withoutReservedMeta(template), uriTemplate: key }
      })
    }
  })
  for (const list of [tools, prompts, resources, templates]) list.sort(byKey)
  return {
    backends: sources.map((source) => source.config),
    tools,
    toolByName: indexBy(tools),
    prompts,
    promptByName: indexBy(prompts),
    resources,
    resourceByUri: indexBy(resources),
    templates,
    templateByUri: indexBy(templates),
    completions: sources.map((source) => source.catalog?.completions ?? false),
    paramHeaders: [...new Set(tools.flatMap((tool) => tool.paramHeaders))].sort()
  }
}
