import { Duration } from "effect"
import { type Rule, rule } from "./cross-field-rule.js"
import { problem } from "./problem.js"
import type { BackendConfig } from "./schema.js"

/**
 * The cross-field rules of write approvals (docs/approvals.md, "Policy"): an approval policy sits on a
 * write rule, names its status tool exactly, and its risk rules can only make it stronger.
 */

type ToolRuleOf = BackendConfig["tool_rules"][number]

const eachApproval = <P>(
  backends: ReadonlyArray<BackendConfig>,
  check: (
    policy: NonNullable<ToolRuleOf["approval"]>,
    path: string,
    toolRule: ToolRuleOf,
    backend: BackendConfig
  ) => ReadonlyArray<P>
): ReadonlyArray<P> =>
  backends.flatMap((backend, index) =>
    backend.tool_rules.flatMap((toolRule, ruleIndex) =>
      toolRule.approval === undefined
        ? []
        : check(toolRule.approval, `backends[${index}].tool_rules[${ruleIndex}].approval`, toolRule, backend)
    )
  )

export const approvalOnWriteRules = rule("approvalOnWriteRules", ["backends"], ({ backends }) =>
  eachApproval(backends, (_, path, toolRule) =>
    toolRule.write ? [] : [problem(path, "applies to write tools only: add write: true to this rule")]
  )
)

export const operationIdArgumentNamed = rule("operationIdArgumentNamed", ["backends"], ({ backends }) =>
  eachApproval(backends, (policy, path) =>
    policy.operation_id_argument === ""
      ? [problem(`${path}.operation_id_argument`, 'must name an argument, for example "/operation_id"')]
      : []
  )
)

/** The status tool is published explicitly (by its exact name), read-only, in the same backend. */
export const statusToolPublished = rule("statusToolPublished", ["backends"], ({ backends }) =>
  eachApproval(backends, (policy, path, _, backend) => {
    const name = policy.status_tool
    if (name === undefined) return []
    const owner = backend.tool_rules.find((each) => each.tools.includes(name))
    if (owner === undefined || !owner.publish || owner.write) {
      return [
        problem(
          `${path}.status_tool`,
          `"${name}" must be published read-only by a tool rule of backend "${backend.id}" that names it exactly (publish: true, write: false)`
        )
      ]
    }
    return policy.operation_id_argument === undefined
      ? [
          problem(
            `${path}.status_tool`,
            "needs operation_id_argument: the status tool is asked with the saved arguments"
          )
        ]
      : []
  })
)

export const approversListed = rule("approversListed", ["backends"], ({ backends }) =>
  eachApproval(backends, (policy, path) =>
    policy.approvers.flatMap((approver, index) =>
      approver.subjects.length === 0
        ? [problem(`${path}.approvers[${index}].subjects`, "must name at least one subject")]
        : []
    )
  )
)

/** A risk rule raises the base policy: it cannot lower the quorum or drop a step-up, and must change something. */
export const riskRulesRaise = rule("riskRulesRaise", ["backends"], ({ backends }) =>
  eachApproval(backends, (policy, path) =>
    policy.risk_rules.flatMap((risk, index) => {
      const at = `${path}.risk_rules[${index}]`
      if (risk.required_approvals === undefined && risk.require_step_up === undefined) {
        return [problem(at, "must set required_approvals or require_step_up")]
      }
      const problems = []
      if (risk.required_approvals !== undefined && risk.required_approvals < policy.required_approvals) {
        problems.push(
          problem(
            `${at}.required_approvals`,
            `can only raise the rule's required_approvals (${policy.required_approvals}), not lower it`
          )
        )
      }
      if (risk.require_step_up === false && policy.require_step_up) {
        problems.push(problem(`${at}.require_step_up`, "can only raise the rule's require_step_up (true), not drop it"))
      }
      return problems
    })
  )
)

/** Step-up is fresh OIDC authentication with an assurance level the operator names; without one it cannot be checked. */
export const stepUpConfigured = rule("stepUpConfigured", ["backends", "approvals"], ({ backends, approvals }) => {
  if (approvals.step_up.acr_values.length > 0) return []
  return eachApproval(backends, (policy, path) =>
    policy.require_step_up || policy.risk_rules.some((risk) => risk.require_step_up === true)
      ? [
          problem(
            path,
            "asks for step-up, which needs approvals.step_up.acr_values (the assurance levels your identity provider asserts in acr)"
          )
        ]
      : []
  )
})

/** Reviewers approve on the gateway's own pages, which the built-in authorization server serves. */
export const approvalsNeedBuiltin = rule("approvalsNeedBuiltin", ["backends", "auth"], ({ backends, auth }) =>
  auth.mode === "builtin"
    ? []
    : eachApproval(backends, (_, path) => [
        problem(path, "needs auth.mode: builtin: reviewers approve on the gateway's own review pages (/sso/approvals)")
      ])
)

export const approvalDurationsPositive = rule("approvalDurationsPositive", ["approvals"], ({ approvals }) =>
  (
    [
      ["approvals.expires_after", approvals.expires_after],
      ["approvals.execute_within", approvals.execute_within],
      ["approvals.retention", approvals.retention],
      ["approvals.step_up.max_age", approvals.step_up.max_age]
    ] as const
  ).flatMap(([path, value]) => (Duration.toMillis(value) > 0 ? [] : [problem(path, "must be greater than zero")]))
)

export const approvalRules: ReadonlyArray<Rule> = [
  approvalOnWriteRules,
  operationIdArgumentNamed,
  statusToolPublished,
  approversListed,
  riskRulesRaise,
  stepUpConfigured,
  approvalsNeedBuiltin,
  approvalDurationsPositive
]
