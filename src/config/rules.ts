import { adminRules } from "./admin-rules.js"
import { approvalRules } from "./approval-rules.js"
import { authRules } from "./auth-rules.js"
import { backendRules } from "./backend-rules.js"
import type { Rule } from "./cross-field-rule.js"
import { observabilityRules } from "./observability-rules.js"
import type { GatewayConfig } from "./schema.js"
import { serverRules } from "./server-rules.js"
import type { ConfigProblem, ResolvedSecrets } from "./service.js"

export { parseListen } from "./address.js"
export type { Rule } from "./cross-field-rule.js"

/** Every cross-field rule, in the order problems are listed. */
export const allRules: ReadonlyArray<Rule> = [
  ...serverRules,
  ...authRules,
  ...adminRules,
  ...backendRules,
  ...approvalRules,
  ...observabilityRules
]

/** Runs every rule whose sections decoded; `config` is the full config or just the sections that decoded. */
export const checkRules = (
  config: Partial<GatewayConfig>,
  secrets: ResolvedSecrets,
  rules: ReadonlyArray<Rule> = allRules
): ReadonlyArray<ConfigProblem> => rules.flatMap((each) => each.check(config, secrets))
