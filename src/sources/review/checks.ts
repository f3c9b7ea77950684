import type { ProposalSummary } from "../changes.js"

/**
 * Who may review a configuration change (docs/tool-sources.md, "Configuration review"), decided here
 * only, as small named checks run in order: the first that refuses gives the reason. The pages gather
 * the facts (`ReviewFacts`) and act on the answer; nothing else decides who reviews.
 */

/** What the person asks for: to see the pages, start a step-up, or decide a proposal. */
export type ReviewAction = "view" | "step_up" | "approve" | "reject"

/** The signed-in person as the checks see them; their grant is read now, not when they signed in. */
export interface ReviewerFacts {
  readonly userId: string
  /** Enabled, active in the directory, and organization memberships not stale. */
  readonly active: boolean
  /** The scopes they hold now (src/auth/held-scopes.ts). */
  readonly scopes: ReadonlySet<string>
  /** The `subjects` entries that name them (src/approvals/reviewers.ts, `namesOf`). */
  readonly names: ReadonlySet<string>
  /** The administrator who handed them their current credentials through an enrolment link, if one did. */
  readonly credentialsIssuedBy: string | undefined
}

/** The static `admin.approvals.policy_changes` settings as the checks use them. */
export interface ReviewSettings {
  /** The `security_reviewer` role's scopes: `required_scopes`, else `gateway:security`. */
  readonly securityScopes: ReadonlyArray<string>
  /** `subjects`, when listed: only these people review. */
  readonly subjects: ReadonlyArray<string> | undefined
  readonly requireStepUp: boolean
}

export interface ReviewFacts {
  readonly action: ReviewAction
  /** The request carries `Authorization: Bearer …`: a script with an API token, never the pages' own form. */
  readonly bearer: boolean
  /** For a post (and a step-up start): the browser says it comes from the gateway's own pages. */
  readonly ownOrigin: boolean
  /** For a post (and a step-up start): the form's anti-CSRF token is this sign-in's. */
  readonly csrf: boolean
  /** Undefined: nobody is signed in in this browser. */
  readonly reviewer: ReviewerFacts | undefined
  readonly settings: ReviewSettings
  /** The proposal decided on (approve, reject, step-up). */
  readonly proposal?: ProposalSummary
  /** The reviewer stepped up for this proposal in this sign-in, freshly, with an accepted `acr`. */
  readonly steppedUp: boolean
}

export type RefusalReason =
  | "foreign_origin"
  | "api_token"
  | "not_signed_in"
  | "csrf"
  | "inactive"
  | "not_security_reviewer"
  | "not_listed"
  | "self_review"
  | "credentials_issued_by_proposer"
  | "step_up_required"

export interface Refusal {
  readonly reason: RefusalReason
  readonly message: string
  /**
   * 403 for a request or person that may not (nobody signed in too: the pages take no credentials a
   * 401 could challenge for), 409 for what is needed first (step-up).
   */
  readonly status: number
}

type Check = (facts: ReviewFacts) => Refusal | undefined

const changes = (facts: ReviewFacts) => facts.action !== "view"

/** Posts and the step-up's start come from the gateway's own page (Fetch metadata, Origin). */
export const checkOrigin: Check = (facts) =>
  changes(facts) && !facts.ownOrigin
    ? { reason: "foreign_origin", message: "This form was not submitted from the gateway's own page.", status: 403 }
    : undefined

/** The pages take no bearer token: an API token (even an administrator's) can never review. */
export const checkNoApiToken: Check = (facts) =>
  facts.bearer
    ? {
        reason: "api_token",
        message: "Configuration changes are reviewed in a browser sign-in only; API tokens cannot review them.",
        status: 403
      }
    : undefined

export const checkSignedIn: Check = (facts) =>
  facts.reviewer === undefined
    ? { reason: "not_signed_in", message: "Sign in as a security reviewer first.", status: 403 }
    : undefined

export const checkCsrf: Check = (facts) =>
  changes(facts) && !facts.csrf
    ? {
        reason: "csrf",
        message: "The form is stale or was not issued by the gateway. Reload the page and try again.",
        status: 403
      }
    : undefined

export const checkActive: Check = (facts) =>
  facts.reviewer?.active === true
    ? undefined
    : {
        reason: "inactive",
        message: "Your account is not active, or its organization memberships must be confirmed again.",
        status: 403
      }

/**
 * The security reviewer's scopes, held now. The administrator's or the write approver's role alone
 * does not hold them (docs/access-policy.md, "Roles").
 */
export const checkSecurityScope: Check = (facts) => {
  const held = facts.reviewer?.scopes ?? new Set<string>()
  const scopes = facts.settings.securityScopes
  return scopes.length > 0 && scopes.every((scope) => held.has(scope))
    ? undefined
    : {
        reason: "not_security_reviewer",
        message: "Reviewing configuration changes needs the security reviewer role.",
        status: 403
      }
}

/** `subjects`, when listed, names the reviewers; nobody else reviews, whatever their role. */
export const checkListed: Check = (facts) => {
  const subjects = facts.settings.subjects
  if (subjects === undefined) return undefined
  const names = facts.reviewer?.names ?? new Set<string>()
  return subjects.some((subject) => names.has(subject))
    ? undefined
    : {
        reason: "not_listed",
        message: "Configuration changes are reviewed by named security reviewers only.",
        status: 403
      }
}

/** Nobody decides their own proposal (ConfigChanges refuses it again). */
export const checkNotProposer: Check = (facts) =>
  changes(facts) && facts.proposal !== undefined && facts.proposal.proposed_by.user_id === facts.reviewer?.userId
    ? {
        reason: "self_review",
        message: "You proposed this change: another security reviewer must decide it.",
        status: 403
      }
    : undefined

/**
 * Nor does a person whose credentials the proposer handed out (the local account's enrolment link,
 * docs/local-accounts.md): the proposer held that link, so may hold the account.
 */
export const checkNotIssuedByProposer: Check = (facts) =>
  changes(facts) &&
  facts.proposal !== undefined &&
  facts.reviewer?.credentialsIssuedBy !== undefined &&
  facts.reviewer.credentialsIssuedBy === facts.proposal.proposed_by.user_id
    ? {
        reason: "credentials_issued_by_proposer",
        message:
          "The proposer set up your account's credentials (its enrolment link), so your review would not be independent: another security reviewer must decide it.",
        status: 403
      }
    : undefined

/** `require_step_up`: approving needs a fresh, stronger sign-in at the identity provider for this proposal. */
export const checkSteppedUp: Check = (facts) =>
  facts.action === "approve" && facts.settings.requireStepUp && !facts.steppedUp
    ? {
        reason: "step_up_required",
        message:
          "Approving configuration changes needs a fresh sign-in with stronger authentication at your organization's OpenID Connect provider.",
        status: 409
      }
    : undefined

/** In this order: where the request comes from, who is asking, what they hold, what the proposal allows. */
export const reviewChecks: ReadonlyArray<Check> = [
  checkOrigin,
  checkNoApiToken,
  checkSignedIn,
  checkCsrf,
  checkActive,
  checkSecurityScope,
  checkListed,
  checkNotProposer,
  checkNotIssuedByProposer,
  checkSteppedUp
]

/** The first refusal of the pipeline, or undefined: this person may do this now. */
export const reviewRefusal = (facts: ReviewFacts): Refusal | undefined => {
  for (const check of reviewChecks) {
    const refusal = check(facts)
    if (refusal !== undefined) return refusal
  }
  return undefined
}
