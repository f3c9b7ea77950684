import { createHash } from "node:crypto"
import type { Caller } from "../bearer/caller.js"
import type { EndpointAccess, Grant, GrantedEntry } from "./grant.js"
import type { GatewayToolRule, PolicyEndpoint, PolicyTool } from "./tool.js"

/**
 * What one caller may see and use on /mcp, built once per request from the caller's token and Grant
 * (docs/access-policy.md, "Catalog"). Both /mcp paths read it; neither decides anything itself.
 *
 * An endpoint (a backend, an HTTP tool or OpenAPI import, a tool group: src/policy/tool.ts) is open when
 * the token's scopes, narrowed to the scopes the user holds now, include all of its `required_scopes`.
 * A tool of an open endpoint is visible when an access entry names it (and, for a write tool, one that
 * allows write requests); prompts, resources and subscriptions are separate permissions of the same
 * entries (backends only have them).
 */
export class View {
  /** Equal for two callers exactly when they see the same: what the tools/list page cache is keyed by. */
  readonly fingerprint: string

  constructor(
    readonly caller: Caller,
    readonly grant: Grant | undefined,
    /** Per endpoint (`endpointsOf` index): its access, undefined when closed or nothing is granted. */
    private readonly access: ReadonlyArray<EndpointAccess | undefined>,
    readonly epoch: number,
    /** When this view stops being valid (an enterprise membership going stale), ms since epoch. */
    readonly validUntil: number,
    /** The generation's gateway-provided tools: which of them this caller sees is part of the fingerprint. */
    gatewayTools: ReadonlyArray<GatewayToolRule> = []
  ) {
    const parts = access.map((endpoint) => endpoint?.key ?? "-")
    parts.push(gatewayTools.map((tool) => (tool.allowed(this) ? "1" : "0")).join(""))
    this.fingerprint = createHash("sha256").update(parts.join("\n")).digest("base64url")
  }

  /** The access entries naming `tool` (empty: the tool is not visible to this caller). */
  entriesFor(tool: PolicyTool): ReadonlyArray<GrantedEntry> {
    return this.access[tool.endpoint]?.entries(tool.original) ?? []
  }

  seesTool(tool: PolicyTool): boolean {
    if (tool.gateway !== undefined) return tool.gateway.allowed(this)
    const endpoint = this.access[tool.endpoint]
    if (endpoint === undefined || endpoint.entries(tool.original).length === 0) return false
    return !tool.write || endpoint.writable(tool.original)
  }

  /** The caller may send write requests to some tool of endpoint `endpoint` (`endpointsOf` index). */
  writesTo(endpoint: number): boolean {
    return this.access[endpoint]?.writesAny === true
  }

  /** A backend's prompt (`backend`: its config index, which is its endpoint index). */
  seesPrompt(entry: { readonly backend: number; readonly original: string }): boolean {
    return this.access[entry.backend]?.prompt(entry.original) === true
  }

  readsResources(backend: number): boolean {
    return this.access[backend]?.readResources === true
  }

  /** The caller may open a `subscriptions/listen` stream. */
  get subscribes(): boolean {
    return this.access.some((endpoint) => endpoint?.subscribe === true)
  }
}

export const isOpen = (endpoint: Pick<PolicyEndpoint, "required_scopes">, scopes: ReadonlySet<string>): boolean =>
  endpoint.required_scopes.every((scope) => scopes.has(scope))

/** The token's scopes the user still holds: removed ones deny at once, added ones need a new token. */
export const effectiveScopes = (caller: Caller, grant: Grant | undefined): ReadonlySet<string> => {
  const held = grant?.scopes
  if (held === undefined) return new Set()
  const scopes = new Set<string>()
  for (const scope of caller.scopes) if (held.has(scope)) scopes.add(scope)
  return scopes
}

/** The per-endpoint access of `grant` for the endpoints these scopes open. */
export const endpointAccess = (
  endpoints: ReadonlyArray<Pick<PolicyEndpoint, "id" | "required_scopes">>,
  grant: Grant | undefined,
  scopes: ReadonlySet<string>
): ReadonlyArray<EndpointAccess | undefined> =>
  endpoints.map((endpoint) => (isOpen(endpoint, scopes) ? grant?.endpoint(endpoint.id) : undefined))
