import type { ApprovalRow } from "../store/approvals.js"
import type { UserRow } from "../store/users.js"

/** A signed-in person on the review page, and whether they hold the approver role now. */
export interface Reviewer {
  readonly user: UserRow
  readonly approver: boolean
  /** The namespace of the OpenID Connect / OAuth2 connection people sign in with now, if any. */
  readonly upstreamNamespace: string | undefined
}

/** A reviewer's step-up for one approval: fresh OIDC authentication and the `acr` it asserted. */
export interface StepUpEvidence {
  readonly approvalId: string
  readonly acr: string
  readonly authTime: number
}

export interface Refusal {
  readonly reason: string
  readonly message: string
}

/**
 * Whether `approvers[].subjects` names this person (docs/approvals.md, "Policy"): their user id; a
 * local account as `local:<username>`; an enterprise identity by its subject at the connection people
 * sign in with now — never a subject of an older or another connection, where the same text may be
 * someone else.
 */
export const listedIn = (subjects: ReadonlyArray<string>, reviewer: Reviewer): boolean => {
  const { user } = reviewer
  if (subjects.includes(user.id)) return true
  if (user.kind !== "enterprise") return user.username !== null && subjects.includes(`local:${user.username}`)
  return (
    user.external_subject !== null &&
    user.namespace !== null &&
    user.namespace === reviewer.upstreamNamespace &&
    subjects.includes(user.external_subject)
  )
}

/** Whether `user` asked for this approval (builtin: the user id; external: the token's subject). */
export const isRequester = (row: ApprovalRow, user: UserRow) =>
  row.subject === user.id || (user.external_subject !== null && row.subject === user.external_subject)

/** A reviewer sees an approval they may act on, and a requester their own; nobody else learns it exists. */
export const mayView = (row: ApprovalRow, reviewer: Reviewer) =>
  isRequester(row, reviewer.user) || reviewRefusal(row, reviewer, "reject") === undefined

/**
 * Who may review what (docs/approvals.md, "Reviewers"), in one place: the approver role held now, the
 * rule's `approvers` list when it has one, and never one's own request for a vote (no self-approval,
 * whatever the quorum). Rejecting or revoking one's own request only stops it, so a requester who is
 * a reviewer may.
 */
export const reviewRefusal = (
  row: ApprovalRow,
  reviewer: Reviewer,
  action: "approve" | "reject" | "revoke"
): Refusal | undefined => {
  if (!reviewer.approver) {
    return { reason: "not_approver", message: "Reviewing write approvals needs the approver role." }
  }
  if (row.approvers.length > 0 && !listedIn(row.approvers, reviewer)) {
    return { reason: "not_listed", message: "This tool's approvals are reviewed by named reviewers only." }
  }
  if (action === "approve" && isRequester(row, reviewer.user)) {
    return { reason: "self_approval", message: "You cannot approve your own request." }
  }
  return undefined
}
