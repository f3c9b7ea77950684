import type { Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from "@modelcontextprotocol/client"
import type { ApprovalPolicy, BackendConfig } from "../../config/schema.js"
import { type BackendCatalog, declaredParamHeaders, withoutReservedMeta } from "./backend-catalog.js"
import { type GatewayTool, gatewayToolName } from "./gateway-tools.js"
import { exposeName, exposeUri, namingOf, parseExposedUri } from "./naming.js"
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
  /** Names and URIs more than one backend exposes (or a backend and the gateway): exposed by no backend. */
  readonly collisions: ReadonlyArray<Collision>
  /** Resource URIs more than one backend lists, and which backends: refused when a client reads one. */
  readonly collidedResources: ReadonlyMap<string, ReadonlyArray<number>>
  /** Templates more than one backend lists: not listed, but still claim the URIs they match (routeUri). */
  readonly collidedTemplates: ReadonlyArray<Entry<ResourceTemplate>>
}

export interface Collision {
  readonly kind: "tool" | "prompt" | "resource" | "resource template"
  readonly key: string
  /** Backend ids; `gateway` for a gateway-provided tool (which keeps its name). */
  readonly backends: ReadonlyArray<string>
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
  let tools: Array<ExposedTool> = gatewayTools
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
  let prompts: Array<Entry<Prompt>> = []
  let resources: Array<Entry<Resource>> = []
  let templates: Array<Entry<ResourceTemplate>> = []
  sources.forEach(({ config, catalog }, backend) => {
    if (catalog === undefined) return
    const publication = publicationOf(config)
    const naming = namingOf(config)
    for (const tool of catalog.tools) {
      const decision = publication(tool.name)
      const key = exposeName(naming, tool.name)
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
      const key = exposeName(naming, prompt.name)
      if (key !== undefined)
        prompts.push({ key, backend, original: prompt.name, item: { ...withoutReservedMeta(prompt), name: key } })
    }
    for (const resource of catalog.resources) {
      const key = exposeUri(naming, resource.uri)
      resources.push({ key, backend, original: resource.uri, item: { ...withoutReservedMeta(resource), uri: key } })
    }
    for (const template of catalog.templates) {
      const key = exposeUri(naming, template.uriTemplate)
      templates.push({
        key,
        backend,
        original: template.uriTemplate,
        item: { ...withoutReservedMeta(template), uriTemplate: key }
      })
    }
  })
  const collisions: Array<Collision> = []
  const idOf = (backend: number) => (backend === GATEWAY_BACKEND ? "gateway" : (sources[backend]?.config.id ?? "?"))
  const dropped = { resources: [] as Array<Entry<Resource>>, templates: [] as Array<Entry<ResourceTemplate>> }
  tools = withoutCollisions(tools, "tool", idOf, collisions)
  prompts = withoutCollisions(prompts, "prompt", idOf, collisions)
  resources = withoutCollisions(resources, "resource", idOf, collisions, dropped.resources)
  templates = withoutCollisions(templates, "resource template", idOf, collisions, dropped.templates)
  for (const list of [tools, prompts, resources, templates]) list.sort(byKey)
  const collidedResources = new Map<string, Array<number>>()
  for (const { key, backend } of dropped.resources) {
    collidedResources.set(key, [...(collidedResources.get(key) ?? []), backend])
  }
  return {
    collisions,
    collidedResources,
    collidedTemplates: dropped.templates,
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

/**
 * Entries whose key no other backend exposes. A key several backends expose is exposed by none of them
 * (deny on doubt: a client must never reach one backend by a name it learned from another); a
 * gateway-provided tool keeps its name and the backend's tool of that name is dropped.
 */
const withoutCollisions = <T extends { readonly key: string; readonly backend: number }>(
  entries: Array<T>,
  kind: Collision["kind"],
  idOf: (backend: number) => string,
  collisions: Array<Collision>,
  /** Receives the entries left out. */
  left: Array<T> = []
): Array<T> => {
  const owners = new Map<string, Set<number>>()
  for (const entry of entries) {
    const seen = owners.get(entry.key)
    if (seen === undefined) owners.set(entry.key, new Set([entry.backend]))
    else seen.add(entry.backend)
  }
  const dropped = new Set<string>()
  for (const [key, backends] of owners) {
    if (backends.size < 2) continue
    dropped.add(key)
    collisions.push({ kind, key, backends: [...backends].map(idOf).sort() })
  }
  if (dropped.size === 0) return entries
  return entries.filter((entry) => {
    const kept = !dropped.has(entry.key) || entry.backend === GATEWAY_BACKEND
    if (!kept) left.push(entry)
    return kept
  })
}

/** Where a resource URI a client sent goes: one backend, several (refused), or none (not found). */
export type UriRoute =
  | { readonly _tag: "Backend"; readonly backend: number; readonly original: string }
  | { readonly _tag: "Collision" }
  | { readonly _tag: "None" }

const none: UriRoute = { _tag: "None" }
const collision: UriRoute = { _tag: "Collision" }

/**
 * The backend a resource URI a client sent belongs to, and the URI as that backend knows it, among the
 * backends the caller may read (`readable`: the caller's view) — a backend it may not read is never
 * chosen, nor lets another win. A URI more than one backend lists (a `catalog.name_collision`) goes to
 * none: a Collision when the caller may read one of them, else None (it is shown none of them). A
 * `gateway://<id>/…` URI of a backend with gateway URIs goes to that backend. For backends exposing
 * their original URIs:
 * - a listed resource goes to its backend;
 * - else the template whose literal start matches most of the URI (templates more than one backend
 *   lists take part too, so a less specific one cannot take their URIs); two backends matching equally:
 *   None;
 * - else the only such backend, if there is one.
 */
export const routeUri = (index: CatalogIndex, uri: string, readable: (backend: number) => boolean): UriRoute => {
  const publishers = index.collidedResources.get(uri)
  if (publishers !== undefined) return publishers.some(readable) ? collision : none
  const parsed = parseExposedUri(uri)
  if (parsed !== undefined) {
    const backend = index.backends.findIndex((config) => config.id === parsed.backendId)
    const config = index.backends[backend]
    if (config !== undefined && !namingOf(config).originalUris) {
      return readable(backend) ? { _tag: "Backend", backend, original: parsed.original } : none
    }
  }
  const originalUris = (backend: number) => {
    const config = index.backends[backend]
    return config !== undefined && namingOf(config).originalUris && readable(backend)
  }
  const listed = index.resourceByUri.get(uri)
  if (listed !== undefined && originalUris(listed.backend)) {
    return { _tag: "Backend", backend: listed.backend, original: uri }
  }
  let best: { backend: number; length: number; tie: boolean } | undefined
  for (const templates of [index.templates, index.collidedTemplates]) {
    for (const template of templates) {
      if (!originalUris(template.backend)) continue
      const literal = template.key.split("{", 1)[0]!
      if (literal === "" || !uri.startsWith(literal)) continue
      if (best === undefined || literal.length > best.length)
        best = { backend: template.backend, length: literal.length, tie: false }
      else if (literal.length === best.length && template.backend !== best.backend) best.tie = true
    }
  }
  if (best !== undefined) return best.tie ? none : { _tag: "Backend", backend: best.backend, original: uri }
  const original = index.backends.flatMap((_, backend) => (originalUris(backend) ? [backend] : []))
  return original.length === 1 ? { _tag: "Backend", backend: original[0]!, original: uri } : none
}
