import type { ApprovalRow } from "../store/approvals.js"
import type { UserRow } from "../store/users.js"

/** A signed-in person on the review page, and whether they hold the approver role now. */
export interface Reviewer {
  readonly user: UserRow
  readonly approver: boolean
  /** The namespace of the OpenID Connect / OAuth2 connection people sign in with now, if any. */
  readonly upstreamNamespace: string | undefined
  /**
   * The `approvers[].subjects` entries that name this person (`namesOf`), worked out once when they
   * open the review page.
   */
  readonly names: ReadonlySet<string>
  /**
   * The administrator who handed this person their current credentials through an enrolment link
   * (docs/local-accounts.md), if one did: they held the link, so they may hold the account.
   */
  readonly credentialsIssuedBy: string | undefined
}

/**
 * The `approvers[].subjects` entries that name `user` (docs/approvals.md, "Policy"): their user id; a
 * local account (or the built-in administrator) as `local:<username>`; an enterprise identity by its
 * subject at the connection people sign in with now (`upstreamNamespace`) — never a subject of an
 * older or another connection, where the same text may be someone else. An entry means one thing
 * only: a `local:` entry names a local account, never an enterprise subject spelled that way, and an
 * entry that is some person's user id names that person, never an enterprise subject that happens
 * to read the same (`idTaken`: whether the subject is a user id here).
 */
export const namesOf = (user: UserRow, upstreamNamespace: string | undefined, idTaken: boolean): Set<string> => {
  const names = new Set<string>([user.id])
  if (user.kind !== "enterprise") {
    if (user.username !== null) names.add(`local:${user.username}`)
    return names
  }
  const subject = user.external_subject
  if (
    subject !== null &&
    user.namespace !== null &&
    user.namespace === upstreamNamespace &&
    !subject.startsWith("local:") &&
    (subject === user.id || !idTaken)
  ) {
    names.add(subject)
  }
  return names
}

/** Whether `approvers[].subjects` names this person (`namesOf`). */
export const listedIn = (subjects: ReadonlyArray<string>, reviewer: Reviewer): boolean =>
  subjects.some((subject) => reviewer.names.has(subject))

/**
 * Whether `user` asked for this approval: by the gateway's user id of the requester, the one key that
 * is never another person's (a subject text may be: the same enterprise subject at two connections).
 */
export const isRequester = (row: ApprovalRow, user: UserRow) =>
  row.requester_id !== null && row.requester_id === user.id

/** Whether `user` may have asked for it: also when who asked is not known (a row from before the key). */
const mayBeRequester = (row: ApprovalRow, user: UserRow) => row.requester_id === null || row.requester_id === user.id

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
  // Deny on doubt: when who asked is not known, nobody approves (rejecting and revoking still stop it).
  if (action === "approve" && mayBeRequester(row, reviewer.user)) {
    return {
      reason: "self_approval",
      message:
        row.requester_id === null
          ? "Who asked for this is not known, so nobody can approve it; reject it or let it expire."
          : "You cannot approve your own request."
    }
  }
  // Whoever handed this account its credentials may be holding it: their own request is not for it.
  if (action === "approve" && row.requester_id !== null && reviewer.credentialsIssuedBy === row.requester_id) {
    return {
      reason: "credentials_issued_by_requester",
      message:
        "The person who asked for this set up your account's credentials (its enrolment link), so your approval would not be independent; another reviewer must approve it."
    }
  }
  return undefined
}
