import type { Tool } from "@modelcontextprotocol/client"
import { Context } from "effect"
import type { BackendConfig } from "../../config/schema.js"
import type { CallDecision } from "../../policy/decide.js"
import type { View } from "../../policy/view.js"
import type { ToolCallOutcome, ToolCallRequest } from "../calls/tool-calls.js"
import type { CatalogIndex, ExposedTool } from "./index.js"

/**
 * What ToolCalls lends a gateway-provided tool that acts on a backend tool (the approvals' status and
 * resume tools): the catalog now, the PolicyEngine's decision, and one execution of a backend tool.
 */
export interface GatewayToolRunner {
  readonly index: () => CatalogIndex
  readonly backend: (index: number) => BackendConfig | undefined
  readonly decide: (view: View, tool: ExposedTool, args: Record<string, unknown> | undefined) => CallDecision
  /** The tool's backend has a connection now (a call would be sent, not refused before sending). */
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
 * src/approvals/tools.ts). It sits in the catalog beside the backends' tools, under its own name —
 * which never collides with theirs, since exposed backend names always contain `__` — and ToolCalls
 * runs it after the PolicyEngine has decided, like any other tool.
 */
export interface GatewayTool {
  /** What `tools/list` shows; `name` must match `gateway_[a-z0-9_]+` without a double underscore. */
  readonly definition: Tool
  /** Whether this caller may see and call it; the PolicyEngine's view asks. */
  readonly allowed: (view: View) => boolean
  readonly call: (request: ToolCallRequest, runner: GatewayToolRunner) => Promise<ToolCallOutcome>
}

export class GatewayTools extends Context.Tag("gateway/GatewayTools")<GatewayTools, ReadonlyArray<GatewayTool>>() {}

/** A generation's gateway-provided tools: the approvals' two (src/approvals/tools.ts, `GatewayToolsLive`). */
export const gatewayToolName = /^gateway_(?!.*__)[a-z0-9_]{1,100}$/
