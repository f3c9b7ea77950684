import type { ApprovalPolicy } from "../config/schema.js"
import { parsePointer, resolvePointer } from "../policy/json-pointer.js"

/** The policy one call gets: the rule's base, raised by the risk rules that hold (docs/approvals.md, "Risk rules"). */
export interface EffectivePolicy {
  readonly requiredApprovals: 1 | 2
  readonly requireStepUp: boolean
  /** Exact subjects allowed to review; empty: any reviewer with the approver role. */
  readonly approvers: ReadonlyArray<string>
  /** For reviewers and the log: `base`, `raised by risk rule 0, 2`, or why it failed closed. */
  readonly risk: string
}

type Condition = "holds" | "fails" | { readonly closed: string }

/**
 * One resource condition of a risk rule: the argument is a nonempty string and one of the allowed
 * values. A missing, empty or non-string argument cannot be judged: the rule fails closed.
 */
const condition = (args: Record<string, unknown>, argument: string, allowed: ReadonlyArray<string>): Condition => {
  const tokens = parsePointer(argument)
  const value = tokens === undefined ? undefined : resolvePointer(args, tokens)
  if (value === undefined) return { closed: `${argument} is missing` }
  if (typeof value !== "string") return { closed: `${argument} is not a string` }
  if (value === "") return { closed: `${argument} is empty` }
  return allowed.includes(value) ? "holds" : "fails"
}

/**
 * The base policy raised by every risk rule whose conditions all hold. When any condition cannot be
 * judged, the call gets the strongest policy the rule can ask for: the highest quorum and step-up of
 * the base and all of its risk rules together (deny on doubt: never weaker than any rule could make it).
 */
export const effectivePolicy = (policy: ApprovalPolicy, args: Record<string, unknown>): EffectivePolicy => {
  const approvers = [...new Set(policy.approvers.flatMap((approver) => approver.subjects))]
  let required: 1 | 2 = policy.required_approvals
  let stepUp = policy.require_step_up
  const raisedBy: Array<number> = []
  for (const [index, risk] of policy.risk_rules.entries()) {
    let holds = true
    for (const resource of risk.resources) {
      const outcome = condition(args, resource.argument, resource.allowed_values)
      if (typeof outcome === "object") return strongest(policy, approvers, `failed closed: ${outcome.closed}`)
      if (outcome === "fails") holds = false
    }
    if (!holds) continue
    raisedBy.push(index)
    if (risk.required_approvals !== undefined && risk.required_approvals > required) required = risk.required_approvals
    if (risk.require_step_up === true) stepUp = true
  }
  const risk = raisedBy.length === 0 ? "base" : `raised by risk rule ${raisedBy.join(", ")}`
  return { requiredApprovals: required, requireStepUp: stepUp, approvers, risk }
}

const strongest = (policy: ApprovalPolicy, approvers: ReadonlyArray<string>, risk: string): EffectivePolicy => ({
  requiredApprovals: policy.risk_rules.reduce<1 | 2>(
    (most, rule) =>
      rule.required_approvals !== undefined && rule.required_approvals > most ? rule.required_approvals : most,
    policy.required_approvals
  ),
  requireStepUp: policy.require_step_up || policy.risk_rules.some((rule) => rule.require_step_up === true),
  approvers,
  risk
})
