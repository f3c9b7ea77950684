import type { ApprovalPolicy } from "../../config/schema.js"
import type { CallContext } from "./check.js"

/**
 * The last step: a write tool whose rule carries an `approval` policy needs per-operation approval,
 * whatever the access entry allows (`allow_write_requests` never bypasses it).
 */
export const approvalNeeded = ({ tool }: CallContext): ApprovalPolicy | undefined =>
  tool.write ? tool.approval : undefined
