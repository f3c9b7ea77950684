/** docs/approvals.md, "Policy": the approval keys of a tool rule are validated at load, each problem named precisely. */
import { describe, expect, it } from "@effect/vitest"
import * as approvals from "../../src/config/approval-rules.js"
import type { Rule } from "../../src/config/cross-field-rule.js"
import { checkRules } from "../../src/config/rules.js"
import { configOf, noSecrets } from "../fixtures/config/base.js"

const run = (rule: Rule, patch: Record<string, unknown>) =>
  rule.check(configOf(patch), noSecrets).map(({ path, message }) => `${path}: ${message}`)

const withRules = (toolRules: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  backends: [{ id: "ops", url: "https://ops.example.com/mcp", tool_rules: toolRules }],
  ...extra
})
const deploy = (approval: Record<string, unknown>, fields: Record<string, unknown> = {}) => ({
  tools: ["deploy"],
  write: true,
  approval,
  ...fields
})
const at = "backends[0].tool_rules[1].approval"

describe("approval policy rules", () => {
  it("a valid policy with status tool, approvers and a raising risk rule passes every rule", () => {
    const config = withRules(
      [
        { tools: ["deploy_status"] },
        deploy({
          operation_id_argument: "/operation_id",
          status_tool: "deploy_status",
          approvers: [{ subjects: ["alice"] }],
          risk_rules: [{ resources: [{ argument: "/env", allowed_values: ["prod"] }], required_approvals: 2 }]
        })
      ],
      {}
    )
    expect(checkRules(configOf(config), noSecrets)).toEqual([])
  })

  it("approval on a rule that is not a write is refused", () => {
    expect(run(approvals.approvalOnWriteRules, withRules([{ tools: ["x"] }, deploy({}, { write: false })]))).toEqual([
      `${at}: applies to write tools only: add write: true to this rule`
    ])
  })

  it("the status tool must be published read-only by exact name in the same backend, with an operation id", () => {
    const cases: ReadonlyArray<[ReadonlyArray<Record<string, unknown>>, string]> = [
      [[{ tools: ["*"] }], "must be published read-only"],
      [[{ tools: ["deploy_status"], publish: false }], "must be published read-only"],
      [[{ tools: ["deploy_status"], write: true }], "must be published read-only"]
    ]
    for (const [first, message] of cases) {
      const problems = run(
        approvals.statusToolPublished,
        withRules([...first, deploy({ operation_id_argument: "/op", status_tool: "deploy_status" })].slice(-2))
      )
      expect(problems.join("\n")).toContain(message)
    }
    expect(
      run(
        approvals.statusToolPublished,
        withRules([{ tools: ["deploy_status"] }, deploy({ status_tool: "deploy_status" })])
      )
    ).toEqual([`${at}.status_tool: needs operation_id_argument: the status tool is asked with the saved arguments`])
  })

  it("a risk rule can only raise the base policy and must change something", () => {
    const problems = run(
      approvals.riskRulesRaise,
      withRules(
        [
          { tools: ["x"] },
          deploy({
            required_approvals: 2,
            require_step_up: true,
            risk_rules: [
              { resources: [{ argument: "/a", allowed_values: ["1"] }], required_approvals: 1 },
              { resources: [{ argument: "/a", allowed_values: ["1"] }], require_step_up: false },
              { resources: [{ argument: "/a", allowed_values: ["1"] }] }
            ]
          })
        ],
        { approvals: { step_up: { acr_values: ["mfa"] } } }
      )
    )
    expect(problems).toEqual([
      `${at}.risk_rules[0].required_approvals: can only raise the rule's required_approvals (2), not lower it`,
      `${at}.risk_rules[1].require_step_up: can only raise the rule's require_step_up (true), not drop it`,
      `${at}.risk_rules[2]: must set required_approvals or require_step_up`
    ])
  })

  it("step-up needs approvals.step_up.acr_values; an empty approvers list and an empty operation id pointer are named", () => {
    const rules = withRules([
      { tools: ["x"] },
      deploy({ require_step_up: true, operation_id_argument: "", approvers: [{ subjects: [] }] })
    ])
    expect(run(approvals.stepUpConfigured, rules)).toEqual([
      `${at}: asks for step-up, which needs approvals.step_up.acr_values (the assurance levels your identity provider asserts in acr)`
    ])
    expect(run(approvals.operationIdArgumentNamed, rules)).toEqual([
      `${at}.operation_id_argument: must name an argument, for example "/operation_id"`
    ])
    expect(run(approvals.approversListed, rules)).toEqual([
      `${at}.approvers[0].subjects: must name at least one subject`
    ])
  })

  it("approvals need the built-in authorization server (its review pages)", () => {
    const external = {
      auth: {
        mode: "external",
        external: { issuer: "https://idp.example.com", jwks_url: "https://idp.example.com/jwks" }
      }
    }
    expect(run(approvals.approvalsNeedBuiltin, withRules([{ tools: ["x"] }, deploy({})], external))).toEqual([
      `${at}: needs auth.mode: builtin: reviewers approve on the gateway's own review pages (/sso/approvals)`
    ])
  })
})
