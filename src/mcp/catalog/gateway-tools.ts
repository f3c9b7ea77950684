import type { Tool } from "@modelcontextprotocol/client"
import { Context } from "effect"
import type { CallDecision } from "../../policy/decide.js"
import type { GatewayToolRule, PolicyEndpoint } from "../../policy/tool.js"
import type { View } from "../../policy/view.js"
import type { ToolCallOutcome, ToolCallRequest } from "../calls/tool-calls.js"
import type { CatalogIndex, ExposedTool } from "./index.js"

/**
 * What ToolCalls lends a gateway-provided tool that acts on another tool (the approvals' status and
 * resume tools): the catalog now, the PolicyEngine's decision, and one execution of a tool.
 */
export interface GatewayToolRunner {
  readonly index: () => CatalogIndex
  /** The endpoint (`endpointsOf` index) the policy decides a tool on. */
  readonly endpoint: (index: number) => PolicyEndpoint | undefined
  /** The hash of the configuration a call of `tool` runs under (src/approvals/source.ts). */
  readonly sourceHash: (tool: ExposedTool) => string
  readonly decide: (view: View, tool: ExposedTool, args: Record<string, unknown> | undefined) => CallDecision
  /** The tool's target can be reached now: an HTTP tool, or a backend with a connection (a call would be sent). */
  readonly reachable: (tool: ExposedTool) => boolean
  /**
   * Sends `tool` these arguments once, for this request (its view, deadline and cancellation). It does
   * not decide: the gateway tool has, with `decide`, and owns what an approval needs besides.
   */
  readonly execute: (
    request: ToolCallRequest,
    tool: ExposedTool,
    args: Record<string, unknown>
  ) => Promise<ToolCallOutcome>
}

/**
 * A tool the gateway itself provides (`gateway_approval_status` and `gateway_resume_approval`,
 * src/mcp/calls/approval-tools.ts). It sits in the catalog beside the backends' tools, under its own name —
 * which never collides with theirs, since exposed backend names always contain `__` — and ToolCalls
 * runs it after the PolicyEngine has decided, like any other tool.
 */
export interface GatewayTool extends GatewayToolRule {
  /** What `tools/list` shows; `name` must match `gateway_[a-z0-9_]+` without a double underscore. */
  readonly definition: Tool
  readonly call: (request: ToolCallRequest, runner: GatewayToolRunner) => Promise<ToolCallOutcome>
}

export class GatewayTools extends Context.Tag("gateway/GatewayTools")<GatewayTools, ReadonlyArray<GatewayTool>>() {}

/** A generation's gateway-provided tools: the approvals' two (src/mcp/calls/approval-tools.ts, `GatewayToolsLive`). */
export const gatewayToolName = /^gateway_(?!.*__)[a-z0-9_]{1,100}$/
