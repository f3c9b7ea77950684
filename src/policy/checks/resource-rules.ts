import type { CompiledRule } from "../grant.js"
import { resolvePointer } from "../json-pointer.js"
import { type CallCheck, deny } from "./check.js"

/**
 * A rule holds when the argument its JSON Pointer names is a non-empty string in `allowed_values`;
 * missing, empty, non-string and unresolvable arguments never hold.
 */
export const ruleHolds = (rule: CompiledRule, args: Record<string, unknown> | undefined): boolean => {
  const value = resolvePointer(args ?? {}, rule.pointer)
  return typeof value === "string" && value !== "" && rule.allowed.has(value)
}

/** Every resource rule of an entry must hold; an entry without rules allows any arguments. */
export const checkResourceRules: CallCheck = (context, candidates) => {
  const matching = candidates.filter((granted) => granted.rules.every((rule) => ruleHolds(rule, context.arguments)))
  return matching.length === 0 ? deny("resource_rule") : matching
}
