import { Context } from "effect"
import type { ApprovalPolicy, BackendConfig } from "../config/schema.js"
import type { ComposedSources, SourceKind } from "../sources/schema.js"
import type { View } from "./view.js"

/**
 * What the policy decides on (docs/access-policy.md): its own types, which the catalog's extend
 * (src/mcp/catalog/index.ts). The policy never imports the catalog: it knows endpoints — backends, HTTP
 * tools, OpenAPI imports and tool groups alike, each an `access[].endpoint_id` — and tools of them.
 */

/** One endpoint a permission group can grant: its id (`access[].endpoint_id`) and the scopes that open it. */
export interface PolicyEndpoint {
  readonly id: string
  readonly kind: SourceKind
  readonly required_scopes: ReadonlyArray<string>
}

/** Who may see and call a gateway-provided tool: its own rule, since no access entry names it. */
export interface GatewayToolRule {
  readonly allowed: (view: View) => boolean
}

/** A tool as the policy decides on it. */
export interface PolicyTool {
  /**
   * The endpoint (index in `endpointsOf`) whose access entries decide: the tool's backend or HTTP
   * endpoint, or the tool group it is exposed through; -1 for a gateway-provided tool.
   */
  readonly endpoint: number
  /** The tool's name as that endpoint's access entries name it. */
  readonly original: string
  readonly write: boolean
  /** Per-operation approval for calls of this write tool. */
  readonly approval: ApprovalPolicy | undefined
  /** Set for a tool the gateway provides itself. */
  readonly gateway?: GatewayToolRule
}

/** A published tool with the name clients know it by (effective access lists them). */
export interface ListedTool extends PolicyTool {
  readonly key: string
  /** For a tool group's tool: the endpoint and original tool a call of it executes. */
  readonly member?: { readonly endpoint: string; readonly tool: string }
}

/** The generation's gateway-provided tools, as the policy sees them (their view is part of the fingerprint). */
export class GatewayToolRules extends Context.Tag("gateway/GatewayToolRules")<
  GatewayToolRules,
  ReadonlyArray<GatewayToolRule>
>() {}

/**
 * A generation's endpoints, in the one order every per-endpoint array follows: `config.backends` (so a
 * backend's index is its slot), then the HTTP endpoints, then the tool groups.
 */
export const endpointsOf = (loaded: {
  readonly config: { readonly backends: ReadonlyArray<BackendConfig> }
  readonly sources?: Pick<ComposedSources, "http" | "toolGroups"> | undefined
}): ReadonlyArray<PolicyEndpoint> => [
  ...loaded.config.backends.map((backend) => ({
    id: backend.id,
    kind: "backend" as const,
    required_scopes: backend.required_scopes
  })),
  ...(loaded.sources?.http ?? []).map((http) => ({
    id: http.id,
    kind: http.kind,
    required_scopes: http.required_scopes
  })),
  ...(loaded.sources?.toolGroups ?? []).map((group) => ({
    id: group.id,
    kind: "tool_group" as const,
    required_scopes: group.required_scopes
  }))
]
