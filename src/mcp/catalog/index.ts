import type { Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from "@modelcontextprotocol/client"
import type { BackendConfig } from "../../config/schema.js"
import { endpointsOf, type ListedTool, type PolicyEndpoint } from "../../policy/tool.js"
import type { ComposedSources, HttpEndpoint, HttpToolSpec, ToolGroup } from "../../sources/schema.js"
import { type BackendCatalog, declaredParamHeaders, withoutReservedMeta } from "./backend-catalog.js"
import { type GatewayTool, gatewayToolName } from "./gateway-tools.js"
import { exposeName, exposeUri, namingOf, parseExposedUri } from "./naming.js"
import { publicationOf, ruleOf } from "./publication.js"

/** One exposed item: its exposed key (name or URI), which backend (config index) and its original key. */
export interface Entry<T> {
  readonly key: string
  readonly backend: number
  readonly original: string
  readonly item: T
}

/**
 * Where a call of an exposed tool runs: a backend's tool (its slot, the backend's config index, and the
 * tool's original name there), an HTTP endpoint's tool (one HTTPS request: src/sources/http/service.ts),
 * or a tool the gateway provides itself. A tool group's tool runs on its member's target.
 */
export type ToolTarget =
  | { readonly _tag: "Backend"; readonly slot: number; readonly original: string }
  | { readonly _tag: "Http"; readonly endpoint: HttpEndpoint; readonly spec: HttpToolSpec }
  | { readonly _tag: "Gateway"; readonly tool: GatewayTool }

/**
 * One exposed tool: what the policy decides on (src/policy/tool.ts: the deciding endpoint — for a tool
 * group's tool, the group — the name its access entries use, write flag and approval), what
 * `tools/list` shows, and where a call runs.
 */
export interface ExposedTool extends ListedTool {
  readonly item: Tool
  readonly target: ToolTarget
  /** The `Mcp-Param-*` headers its input schema declares (SEP-2243), which the MCP SDK's client builds. */
  readonly paramHeaders: ReadonlyArray<string>
  /** Set for a tool the gateway provides itself (its `endpoint` is then -1). */
  readonly gateway?: GatewayTool
  /** Set for a tool group's tool: the group (approvals hash its definition). */
  readonly group?: ToolGroup
}

/**
 * The aggregated catalog of a generation, precomputed whenever a backend's catalog changes so requests
 * only filter and slice: every list sorted by exposed key (stable cursors), every key indexed.
 * Unpublished tools are not in it at all; per-caller filtering (scopes) happens per request.
 */
export interface CatalogIndex {
  readonly backends: ReadonlyArray<BackendConfig>
  /** Every endpoint a tool's `endpoint` indexes: the backends (same indices), HTTP endpoints, tool groups. */
  readonly endpoints: ReadonlyArray<PolicyEndpoint>
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
  /**
   * Names and URIs more than one endpoint exposes (or an endpoint and the gateway, or two members of one
   * tool group): exposed by none of them.
   */
  readonly collisions: ReadonlyArray<Collision>
  /** Resource URIs more than one backend lists, and which backends: refused when a client reads one. */
  readonly collidedResources: ReadonlyMap<string, ReadonlyArray<number>>
  /** Templates more than one backend lists: not listed, but still claim the URIs they match (routeUri). */
  readonly collidedTemplates: ReadonlyArray<Entry<ResourceTemplate>>
}

export interface Collision {
  readonly kind: "tool" | "prompt" | "resource" | "resource template"
  readonly key: string
  /** Endpoint ids; `gateway` for a gateway-provided tool (which keeps its name). */
  readonly backends: ReadonlyArray<string>
}

export interface CatalogSource {
  readonly config: BackendConfig
  readonly catalog: BackendCatalog | undefined
}

/** The managed endpoints beside the backends (src/sources/schema.ts). */
export type ManagedEndpoints = Pick<ComposedSources, "http" | "toolGroups">

const noManaged: ManagedEndpoints = { http: [], toolGroups: [] }

const byKey = <T extends { readonly key: string }>(a: T, b: T) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
const indexBy = <T extends { readonly key: string }>(entries: ReadonlyArray<T>) =>
  new Map(entries.map((entry) => [entry.key, entry]))

/** Where gateway-provided tools sit: no backend, no endpoint. */
export const GATEWAY_BACKEND = -1

/** The `tools/list` item of an HTTP endpoint's tool. */
const httpItem = (key: string, spec: HttpToolSpec): Tool => ({
  name: key,
  ...(spec.title === undefined ? {} : { title: spec.title }),
  description: spec.description,
  inputSchema: spec.input_schema as Tool["inputSchema"]
})

/** The published tools of the backends (by slot) and HTTP endpoints, before collisions are settled. */
const endpointTools = (
  sources: ReadonlyArray<CatalogSource>,
  http: ReadonlyArray<HttpEndpoint>
): Array<Array<ExposedTool>> => {
  const published: Array<Array<ExposedTool>> = sources.map(({ config, catalog }, slot) => {
    if (catalog === undefined) return []
    const publication = publicationOf(config)
    const naming = namingOf(config)
    // A name the backend lists twice is exposed once, as it first lists it: a call names the tool, and
    // a list with one name twice breaks clients.
    const seen = new Set<string>()
    return catalog.tools.flatMap((tool): Array<ExposedTool> => {
      const decision = publication(tool.name)
      const key = exposeName(naming, tool.name)
      if (!decision.published || key === undefined || seen.has(key)) return []
      seen.add(key)
      const item = { ...withoutReservedMeta(tool), name: key }
      return [
        {
          key,
          endpoint: slot,
          original: tool.name,
          write: decision.write,
          approval: decision.approval,
          paramHeaders: declaredParamHeaders(item),
          item,
          target: { _tag: "Backend", slot, original: tool.name }
        }
      ]
    })
  })
  http.forEach((endpoint, at) => {
    const publication = publicationOf(endpoint)
    const naming = namingOf(endpoint)
    published.push(
      endpoint.tools.flatMap((spec): Array<ExposedTool> => {
        const decision = publication(spec.name)
        const key = exposeName(naming, spec.name)
        if (!decision.published || key === undefined) return []
        const item = httpItem(key, spec)
        return [
          {
            key,
            endpoint: sources.length + at,
            original: spec.name,
            write: decision.write,
            approval: decision.approval,
            paramHeaders: declaredParamHeaders(item),
            item,
            target: { _tag: "Http", endpoint, spec }
          }
        ]
      })
    )
  })
  return published
}

/**
 * A tool group's tools (docs/tool-sources.md): each member names published tools of a backend or HTTP
 * endpoint (never another group; an endpoint that is not there, or publishes no such tool, adds
 * nothing). Exposed under the group's naming with their original names; the group's `tool_rules`
 * publish them; write = the member's write OR the rule's; approval = the rule's when it sets one, else
 * the member's. An original name two members contribute is exposed by neither (a collision).
 */
const groupTools = (
  group: ToolGroup,
  endpoint: number,
  endpoints: ReadonlyArray<PolicyEndpoint>,
  published: ReadonlyArray<ReadonlyArray<ExposedTool>>,
  collisions: Array<Collision>
): Array<ExposedTool> => {
  const byOriginal = new Map<string, Array<ExposedTool>>()
  for (const member of group.members) {
    const at = endpoints.findIndex((candidate) => candidate.id === member.endpoint)
    if (at < 0 || endpoints[at]!.kind === "tool_group") continue
    const prefix = member.tool.endsWith("*") ? member.tool.slice(0, -1) : undefined
    for (const tool of published[at] ?? []) {
      if (prefix === undefined ? tool.original !== member.tool : !tool.original.startsWith(prefix)) continue
      const seen = byOriginal.get(tool.original)
      if (seen === undefined) byOriginal.set(tool.original, [tool])
      else if (!seen.includes(tool)) seen.push(tool)
    }
  }
  const rules = ruleOf(group.tool_rules)
  const naming = namingOf(group)
  const tools: Array<ExposedTool> = []
  for (const [original, members] of byOriginal) {
    const key = exposeName(naming, original)
    if (key === undefined) continue
    if (members.length > 1) {
      const ids = members.map((member) => endpoints[member.endpoint]?.id ?? "?")
      collisions.push({ kind: "tool", key, backends: [...new Set(ids)].sort() })
      continue
    }
    const member = members[0]!
    const rule = rules(original)
    if (rule === undefined || !rule.publish) continue
    const write = member.write || rule.write
    tools.push({
      key,
      endpoint,
      original,
      write,
      approval: write ? (rule.approval ?? member.approval) : undefined,
      paramHeaders: member.paramHeaders,
      item: { ...member.item, name: key },
      target: member.target,
      member: { endpoint: endpoints[member.endpoint]?.id ?? "?", tool: member.original },
      group
    })
  }
  return tools
}

/**
 * The index of one moment: `sources` are the backends (by slot), `managed` the HTTP endpoints and tool
 * groups of the generation (src/sources/schema.ts). A tool's `endpoint` indexes `endpointsOf`'s order.
 */
export const buildIndex = (
  sources: ReadonlyArray<CatalogSource>,
  gatewayTools: ReadonlyArray<GatewayTool> = [],
  managed: ManagedEndpoints = noManaged
): CatalogIndex => {
  const endpoints = endpointsOf({ config: { backends: sources.map((source) => source.config) }, sources: managed })
  const collisions: Array<Collision> = []
  const published = endpointTools(sources, managed.http)
  let tools: Array<ExposedTool> = gatewayTools
    .filter((tool) => gatewayToolName.test(tool.definition.name))
    .map((tool) => ({
      key: tool.definition.name,
      endpoint: GATEWAY_BACKEND,
      original: tool.definition.name,
      item: tool.definition,
      write: false,
      approval: undefined,
      paramHeaders: [],
      target: { _tag: "Gateway", tool },
      gateway: tool
    }))
  // One item at a time, never `push(...list)`: a spread passes every element as an argument, and a
  // backend listing some 125,000 tools overflowed the stack (a hostile backend's catalog stopped starts).
  for (const list of published) for (const tool of list) tools.push(tool)
  const groupsFrom = sources.length + managed.http.length
  managed.toolGroups.forEach((group, at) => {
    for (const tool of groupTools(group, groupsFrom + at, endpoints, published, collisions)) tools.push(tool)
  })
  let prompts: Array<Entry<Prompt>> = []
  let resources: Array<Entry<Resource>> = []
  let templates: Array<Entry<ResourceTemplate>> = []
  sources.forEach(({ config, catalog }, backend) => {
    if (catalog === undefined) return
    const naming = namingOf(config)
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
  const idOf = (endpoint: number) => (endpoint === GATEWAY_BACKEND ? "gateway" : (endpoints[endpoint]?.id ?? "?"))
  const dropped = { resources: [] as Array<Entry<Resource>>, templates: [] as Array<Entry<ResourceTemplate>> }
  const ofBackend = (entry: { readonly backend: number }) => entry.backend
  tools = withoutCollisions(tools, (tool) => tool.endpoint, "tool", idOf, collisions)
  prompts = withoutCollisions(prompts, ofBackend, "prompt", idOf, collisions)
  resources = withoutCollisions(resources, ofBackend, "resource", idOf, collisions, dropped.resources)
  templates = withoutCollisions(templates, ofBackend, "resource template", idOf, collisions, dropped.templates)
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
    endpoints,
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
 * Entries whose key no other endpoint exposes (`ownerOf`: the endpoint, or backend, an entry is of). A
 * key several endpoints expose is exposed by none of them (deny on doubt: a client must never reach one
 * endpoint by a name it learned from another); a gateway-provided tool keeps its name and the
 * endpoint's tool of that name is dropped.
 */
const withoutCollisions = <T extends { readonly key: string }>(
  entries: Array<T>,
  ownerOf: (entry: T) => number,
  kind: Collision["kind"],
  idOf: (backend: number) => string,
  collisions: Array<Collision>,
  /** Receives the entries left out. */
  left: Array<T> = []
): Array<T> => {
  const owners = new Map<string, Set<number>>()
  for (const entry of entries) {
    const seen = owners.get(entry.key)
    if (seen === undefined) owners.set(entry.key, new Set([ownerOf(entry)]))
    else seen.add(ownerOf(entry))
  }
  const dropped = new Set<string>()
  for (const [key, backends] of owners) {
    if (backends.size < 2) continue
    dropped.add(key)
    collisions.push({ kind, key, backends: [...backends].map(idOf).sort() })
  }
  if (dropped.size === 0) return entries
  return entries.filter((entry) => {
    const kept = !dropped.has(entry.key) || ownerOf(entry) === GATEWAY_BACKEND
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
