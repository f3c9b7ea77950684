import type { GrantedEntry } from "../grant.js"
import type { PolicyTool } from "../tool.js"
import type { View } from "../view.js"

/** Why a call was refused; logged (`policy.call_denied`), never told to the caller. */
export type DenyReason = "not_visible" | "write_not_allowed" | "resource_rule"

/** One `tools/call` being decided. */
export interface CallContext {
  readonly view: View
  readonly tool: PolicyTool
  readonly arguments: Record<string, unknown> | undefined
}

export interface Denied {
  readonly _tag: "Deny"
  readonly reason: DenyReason
}

/**
 * One named step of the call decision (docs/access-policy.md, "Call"): it narrows the access entries
 * that may still authorize the call, or denies. One entry must pass every step together.
 */
export type CallCheck = (
  context: CallContext,
  candidates: ReadonlyArray<GrantedEntry>
) => ReadonlyArray<GrantedEntry> | Denied

export const deny = (reason: DenyReason): Denied => ({ _tag: "Deny", reason })
