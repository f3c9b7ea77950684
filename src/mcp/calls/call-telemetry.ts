import type { Tracer } from "effect"
import { type CallOutcome, metrics } from "../../observability/metrics.js"
import { closeSpan, openSpan, type TraceHeaders, traceHeadersOf } from "../../observability/tracing.js"
import type { CallDecision } from "../../policy/decide.js"
import type { ExposedTool } from "../catalog/index.js"
import { requestTimeoutCode } from "../upstream/forward.js"
import type { ToolCallOutcome } from "./tool-calls.js"

/**
 * What a tools/call tells the metrics and the trace (docs/operations.md, "Metrics" and "Traces"): the
 * decision (outcome and reason), then, for a call that goes to a backend, its duration and outcome. Only
 * fixed words and the configuration's names: the published tool name, the backend id, an approval id —
 * never an argument, a token or the caller.
 */

/** The decision as counted and traced: outcome and reason in fixed words. */
export const decisionLabels = (decision: CallDecision): { readonly outcome: string; readonly reason: string } =>
  decision._tag === "Allow"
    ? { outcome: "allow", reason: "allowed" }
    : decision._tag === "Deny"
      ? { outcome: "deny", reason: decision.reason }
      : { outcome: "needs_approval", reason: "approval_required" }

/** Counts the decision; with a trace, one `policy.decide` span under the request's. */
export const observeDecision = (
  tracer: Tracer.Tracer | undefined,
  parent: Tracer.AnySpan | undefined,
  tool: ExposedTool,
  decision: CallDecision
): void => {
  const { outcome, reason } = decisionLabels(decision)
  metrics.decision(outcome as "allow" | "deny" | "needs_approval", reason)
  if (tracer === undefined) return
  closeSpan(
    openSpan(tracer, "policy.decide", parent, "internal", {
      "gen_ai.tool.name": tool.key,
      "gateway.policy.outcome": outcome,
      "gateway.policy.reason": reason
    })
  )
}

/** How a call ended, as counted (`gateway_tool_calls_total`'s `outcome`). */
export const outcomeOf = (outcome: ToolCallOutcome): CallOutcome => {
  if (outcome._tag === "Cancelled") return "cancelled"
  if (outcome._tag === "Result") return outcome.result["isError"] === true ? "tool_error" : "ok"
  if (outcome.fromBackend === true) return "backend_error"
  return outcome.error.code === requestTimeoutCode ? "timeout" : "failed"
}

/**
 * Around a call sent to a backend: its duration and outcome counted; with a trace, a client span
 * (`tools/call <tool>`, `spanBackendCall`).
 */
export const observeBackendCall = (
  tracer: Tracer.Tracer | undefined,
  parent: Tracer.AnySpan | undefined,
  backend: string,
  tool: ExposedTool,
  send: (trace: TraceHeaders | undefined) => Promise<ToolCallOutcome>
): Promise<ToolCallOutcome> => {
  const started = performance.now()
  return spanBackendCall(tracer, parent, backend, tool, send).then(
    (outcome) => {
      metrics.toolCall(backend, tool.key, outcomeOf(outcome), (performance.now() - started) / 1000)
      return outcome
    },
    (failure: unknown) => {
      metrics.toolCall(backend, tool.key, "failed", (performance.now() - started) / 1000)
      throw failure
    }
  )
}

/**
 * With a trace, a client span (`tools/call <tool>`) around a call sent to a backend, whose W3C trace
 * context (`traceparent`, and `tracestate` when the trace has one) every path to the backend sends — the
 * channel and the MCP client alike — so the backend's own spans join the trace. Without one, `send`
 * gets undefined and nothing is made.
 */
export const spanBackendCall = (
  tracer: Tracer.Tracer | undefined,
  parent: Tracer.AnySpan | undefined,
  backend: string,
  tool: ExposedTool,
  send: (trace: TraceHeaders | undefined) => Promise<ToolCallOutcome>
): Promise<ToolCallOutcome> => {
  if (tracer === undefined) return send(undefined)
  const span = openSpan(tracer, `tools/call ${tool.key}`, parent, "client", {
    "mcp.method.name": "tools/call",
    "gen_ai.tool.name": tool.key,
    "gateway.backend.id": backend
  })
  return send(traceHeadersOf(span)).then(
    (outcome) => {
      const label = outcomeOf(outcome)
      closeSpan(span, label === "ok" ? undefined : label)
      return outcome
    },
    (failure: unknown) => {
      closeSpan(span, "failed")
      throw failure
    }
  )
}

/** A call that did not go to a backend (denied, invalid, an approval asked for, a gateway tool): counted. */
export const countCall = (backend: string, tool: ExposedTool, outcome: CallOutcome): void =>
  metrics.toolCall(backend, tool.key, outcome)
