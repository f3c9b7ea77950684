import type { ApprovalPolicy, BackendConfig } from "../../config/schema.js"

/**
 * Which original tools of a backend are published, and which count as write tools (docs/mcp.md,
 * "Publication"). Deny by default: a tool no rule matches is not published. The most specific rule
 * decides: an exact name beats any pattern, a longer `prefix*` beats a shorter one; `*` alone matches all.
 */
export interface ToolPublication {
  readonly published: boolean
  readonly write: boolean
  /** The rule's per-operation approval policy (write tools only; src/policy/checks/approval.ts). */
  readonly approval: ApprovalPolicy | undefined
}

const unpublished: ToolPublication = { published: false, write: false, approval: undefined }

interface Matcher {
  readonly pattern: string
  readonly specificity: number
  readonly decision: ToolPublication
}

export const publicationOf = (backend: BackendConfig): ((tool: string) => ToolPublication) => {
  const exact = new Map<string, ToolPublication>()
  const prefixes: Array<Matcher> = []
  for (const rule of backend.tool_rules) {
    const decision = { published: rule.publish, write: rule.write, approval: rule.write ? rule.approval : undefined }
    for (const pattern of rule.tools) {
      if (pattern.endsWith("*")) prefixes.push({ pattern: pattern.slice(0, -1), specificity: pattern.length, decision })
      else exact.set(pattern, decision)
    }
  }
  prefixes.sort((a, b) => b.specificity - a.specificity)
  return (tool) =>
    exact.get(tool) ?? prefixes.find((matcher) => tool.startsWith(matcher.pattern))?.decision ?? unpublished
}
