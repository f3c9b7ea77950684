import type { ApprovalPolicy, ToolRule } from "../../config/schema.js"

/**
 * Which original tools of an endpoint (a backend, an HTTP endpoint, a tool group) are published, and
 * which count as write tools (docs/mcp.md, "Publication"). Deny by default: a tool no rule matches is not published. The most specific rule
 * decides: an exact name beats any pattern, a longer `prefix*` beats a shorter one; `*` alone matches all.
 */
export interface ToolPublication {
  readonly published: boolean
  readonly write: boolean
  /** The rule's per-operation approval policy (write tools only; src/policy/checks/approval.ts). */
  readonly approval: ApprovalPolicy | undefined
}

const unpublished: ToolPublication = { published: false, write: false, approval: undefined }

/** The rule deciding `tool`: the most specific of `rules` matching it, or undefined (none does). */
export const ruleOf = (rules: ReadonlyArray<ToolRule>): ((tool: string) => ToolRule | undefined) => {
  const exact = new Map<string, ToolRule>()
  const prefixes: Array<{ readonly pattern: string; readonly specificity: number; readonly rule: ToolRule }> = []
  for (const rule of rules) {
    for (const pattern of rule.tools) {
      if (pattern.endsWith("*")) prefixes.push({ pattern: pattern.slice(0, -1), specificity: pattern.length, rule })
      else exact.set(pattern, rule)
    }
  }
  prefixes.sort((a, b) => b.specificity - a.specificity)
  return (tool) => exact.get(tool) ?? prefixes.find((matcher) => tool.startsWith(matcher.pattern))?.rule
}

export const publicationOf = (endpoint: {
  readonly tool_rules: ReadonlyArray<ToolRule>
}): ((tool: string) => ToolPublication) => {
  const decisions = new Map<ToolRule, ToolPublication>(
    endpoint.tool_rules.map((rule) => [
      rule,
      { published: rule.publish, write: rule.write, approval: rule.write ? rule.approval : undefined }
    ])
  )
  const matching = ruleOf(endpoint.tool_rules)
  return (tool) => {
    const rule = matching(tool)
    return rule === undefined ? unpublished : decisions.get(rule)!
  }
}
