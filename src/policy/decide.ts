import type { ApprovalPolicy } from "../config/schema.js"
import { approvalNeeded } from "./checks/approval.js"
import type { CallCheck, CallContext, Denied } from "./checks/check.js"
import { checkResourceRules } from "./checks/resource-rules.js"
import { checkVisible } from "./checks/visible.js"
import { checkWriteFlag } from "./checks/write-flag.js"
import type { GrantedEntry } from "./grant.js"

/** The outcome of deciding a `tools/call`: a closed union every caller must handle in full. */
export type CallDecision =
  /** `entry`: the access entry that authorizes it; undefined for a gateway-provided tool. */
  | { readonly _tag: "Allow"; readonly entry: GrantedEntry | undefined }
  | Denied
  /** A write whose tool rule asks for per-operation approval: nothing may reach the backend yet. */
  | { readonly _tag: "NeedsApproval"; readonly entry: GrantedEntry; readonly policy: ApprovalPolicy }

/** In order; each narrows the entries that may authorize the call. */
export const callChecks: ReadonlyArray<readonly [name: string, check: CallCheck]> = [
  ["visible", checkVisible],
  ["write_flag", checkWriteFlag],
  ["resource_rules", checkResourceRules]
]

/**
 * Resolve → **decide** → execute: the one decision about a tools/call (docs/access-policy.md, "Call").
 * One access entry must match the tool, the write flag and every resource rule together; a write tool
 * whose rule carries an `approval` policy then needs approval, whatever the entry allows.
 */
export const decideCall = (context: CallContext): CallDecision => {
  // A gateway-provided tool has no access entries: who may use it is its own rule, asked by the view.
  if (context.tool.gateway !== undefined) {
    return context.view.seesTool(context.tool)
      ? { _tag: "Allow", entry: undefined }
      : { _tag: "Deny", reason: "not_visible" }
  }
  let candidates: ReadonlyArray<GrantedEntry> = []
  for (const [, check] of callChecks) {
    const outcome = check(context, candidates)
    if ("_tag" in outcome) return outcome
    candidates = outcome
  }
  const entry = candidates[0]!
  const policy = approvalNeeded(context)
  return policy === undefined ? { _tag: "Allow", entry } : { _tag: "NeedsApproval", entry, policy }
}
