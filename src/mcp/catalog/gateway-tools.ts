import type { Tool } from "@modelcontextprotocol/client"
import { Context, Layer } from "effect"
import type { View } from "../../policy/view.js"
import type { ToolCallOutcome, ToolCallRequest } from "../calls/tool-calls.js"

/**
 * A tool the gateway itself provides (the approvals feature adds `gateway_approval_status` and
 * `gateway_resume_approval`). It sits in the catalog beside the backends' tools, under its own name —
 * which never collides with theirs, since exposed backend names always contain `__` — and ToolCalls
 * runs it after the PolicyEngine has decided, like any other tool.
 */
export interface GatewayTool {
  /** What `tools/list` shows; `name` must match `gateway_[a-z0-9_]+` without a double underscore. */
  readonly definition: Tool
  /** Whether this caller may see and call it; the PolicyEngine's view asks. */
  readonly allowed: (view: View) => boolean
  readonly call: (request: ToolCallRequest) => Promise<ToolCallOutcome>
}

export class GatewayTools extends Context.Tag("gateway/GatewayTools")<GatewayTools, ReadonlyArray<GatewayTool>>() {}

/** A generation's gateway-provided tools; none yet (the approvals feature registers its two here). */
export const GatewayToolsLive = Layer.succeed(GatewayTools, [])

export const gatewayToolName = /^gateway_(?!.*__)[a-z0-9_]{1,100}$/
