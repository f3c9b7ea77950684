import type { ApprovalRow, VoteRow } from "../store/approvals.js"
import type { RequestOutcome } from "./service.js"

/**
 * The tool results of write approvals (docs/approvals.md, "What the caller gets"). Each has a text for
 * people and models and `structuredContent` for programs; refusals are `isError` results with an
 * `error` code, so an agent sees them as the tool's answer, not a protocol failure.
 */

export const RESUME_TOOL = "gateway_resume_approval"
export const STATUS_TOOL = "gateway_approval_status"

export const approvalUrlOf = (publicUrl: string, id: string) => `${new URL(publicUrl).origin}/sso/approvals/${id}`

const iso = (date: Date | null) => (date === null ? null : date.toISOString())

export const refusal = (error: string, message: string): Record<string, unknown> => ({
  content: [{ type: "text", text: message }],
  structuredContent: { error, message },
  isError: true
})

/** What a write that needs approval answers: nothing reached the backend; here is how to follow up. */
export const pendingResult = (row: ApprovalRow, url: string, created: boolean): Record<string, unknown> => {
  const waiting =
    row.state === "approved"
      ? `It is approved: call ${RESUME_TOOL} with this approval_id to execute it once.`
      : `It waits for ${row.required_approvals === 2 ? "two reviewers" : "a reviewer"}${row.require_step_up ? " (with step-up)" : ""} at ${url}. Once approved, call ${RESUME_TOOL} with this approval_id to execute it once; ${STATUS_TOOL} tells where it stands.`
  return {
    content: [
      {
        type: "text",
        text: `${created ? "This write needs approval and was not executed." : "This operation already has an approval; nothing was executed."} approval_id: ${row.id}. ${waiting}`
      }
    ],
    structuredContent: {
      approval_id: row.id,
      state: row.state,
      approval_url: url,
      required_approvals: row.required_approvals,
      require_step_up: row.require_step_up,
      expires_at: iso(row.expires_at),
      execute_by: iso(row.execute_by),
      resume_tool: RESUME_TOOL,
      status_tool: STATUS_TOOL
    },
    isError: false
  }
}

export const requestRefusal = (outcome: Exclude<RequestOutcome, { _tag: "Pending" }>): Record<string, unknown> => {
  switch (outcome._tag) {
    case "Conflict":
      return refusal("approval_conflict", outcome.message)
    case "Invalid":
      return refusal("operation_id_invalid", outcome.message)
    case "TooLarge":
      return refusal(
        "approval_too_large",
        "These arguments are too large to be reviewed (over 64 KiB as JSON); the write was not executed."
      )
    case "TooMany":
      return refusal(
        "approval_limit",
        "You have 20 approvals waiting or approved; wait for one to finish (or have one rejected) before asking for another."
      )
  }
}

/** The status tool's answer: state, quorum, voters, deadlines, and what else the caller asked for. */
export const statusResult = (
  row: ApprovalRow,
  votes: ReadonlyArray<VoteRow>,
  url: string,
  extra: Record<string, unknown>
): Record<string, unknown> => {
  const status = {
    approval_id: row.id,
    state: row.state,
    tool: row.exposed_name,
    approval_url: url,
    required_approvals: row.required_approvals,
    approvals: votes.length,
    require_step_up: row.require_step_up,
    voters: votes.map((vote) => ({
      name: vote.reviewer_name,
      voted_at: vote.voted_at.toISOString(),
      step_up: vote.step_up_acr !== null
    })),
    risk: row.risk,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
    approved_at: iso(row.approved_at),
    execute_by: iso(row.execute_by),
    finished_at: iso(row.finished_at),
    ...extra
  }
  return {
    content: [
      {
        type: "text",
        text: `Approval ${row.id} is ${row.state} (${votes.length} of ${row.required_approvals} approvals).`
      }
    ],
    structuredContent: status,
    isError: false
  }
}
