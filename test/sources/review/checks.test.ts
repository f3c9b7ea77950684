/**
 * src/sources/review/checks.ts: who may review a configuration change, one named check at a time and
 * as the pipeline orders them (the first refusal is the reason given).
 */
import { describe, expect, it } from "vitest"
import type { ProposalSummary } from "../../../src/sources/changes.js"
import {
  type RefusalReason,
  type ReviewerFacts,
  type ReviewFacts,
  reviewChecks,
  reviewRefusal
} from "../../../src/sources/review/checks.js"

const reviewer: ReviewerFacts = {
  userId: "u-reviewer",
  active: true,
  scopes: new Set(["gateway:security"]),
  names: new Set(["u-reviewer", "local:sam"]),
  credentialsIssuedBy: "u-other-admin"
}

const proposal: ProposalSummary = {
  id: "prp_1",
  kind: "backend",
  target_id: "notes",
  action: "create",
  state: "pending_approval",
  proposed_by: { user_id: "u-admin", name: "Ada" },
  created_at: "2026-01-01T00:00:00.000Z"
}

/** Everything in order: a security reviewer's own-origin post with the right token, step-up not needed. */
const allowed: ReviewFacts = {
  action: "approve",
  bearer: false,
  ownOrigin: true,
  csrf: true,
  reviewer,
  settings: { securityScopes: ["gateway:security"], subjects: undefined, requireStepUp: false },
  proposal,
  steppedUp: false
}

const reasonOf = (changes: Partial<ReviewFacts>) => reviewRefusal({ ...allowed, ...changes })?.reason

describe("who may review a configuration change", () => {
  it("a signed-in security reviewer who did not propose it may approve and reject", () => {
    expect(reasonOf({})).toBeUndefined()
    expect(reasonOf({ action: "reject" })).toBeUndefined()
    const { proposal: _proposal, ...listing } = allowed
    expect(reviewRefusal({ ...listing, action: "view" })).toBeUndefined()
  })

  it.each<[string, Partial<ReviewFacts>, RefusalReason]>([
    ["a post from another origin", { ownOrigin: false }, "foreign_origin"],
    ["a bearer token, even beside a browser session", { bearer: true }, "api_token"],
    ["nobody signed in", { reviewer: undefined }, "not_signed_in"],
    ["a post without this sign-in's anti-CSRF token", { csrf: false }, "csrf"],
    ["a disabled or stale account", { reviewer: { ...reviewer, active: false } }, "inactive"],
    [
      "the administrator's scope alone",
      { reviewer: { ...reviewer, scopes: new Set(["gateway:admin"]) } },
      "not_security_reviewer"
    ],
    [
      "the write approver's scope alone",
      { reviewer: { ...reviewer, scopes: new Set(["gateway:approve"]) } },
      "not_security_reviewer"
    ],
    [
      "only some of the required scopes",
      { settings: { ...allowed.settings, securityScopes: ["gateway:security", "corp:sec"] } },
      "not_security_reviewer"
    ],
    [
      "no required scope at all (deny on doubt)",
      { settings: { ...allowed.settings, securityScopes: [] } },
      "not_security_reviewer"
    ],
    ["not in subjects when listed", { settings: { ...allowed.settings, subjects: ["local:rita"] } }, "not_listed"],
    ["the proposer", { proposal: { ...proposal, proposed_by: { user_id: "u-reviewer", name: "Sam" } } }, "self_review"],
    [
      "a local account whose enrolment link the proposer handed out",
      { reviewer: { ...reviewer, credentialsIssuedBy: "u-admin" } },
      "credentials_issued_by_proposer"
    ],
    ["no step-up when required", { settings: { ...allowed.settings, requireStepUp: true } }, "step_up_required"]
  ])("refuses %s", (_, changes, reason) => {
    expect(reasonOf(changes)).toBe(reason)
  })

  it("subjects, when listed, admit a reviewer by any of their names", () => {
    expect(reasonOf({ settings: { ...allowed.settings, subjects: ["local:sam"] } })).toBeUndefined()
    expect(reasonOf({ settings: { ...allowed.settings, subjects: ["u-reviewer"] } })).toBeUndefined()
  })

  it("step-up is asked of approving only, and done once stepped up", () => {
    const settings = { ...allowed.settings, requireStepUp: true }
    expect(reasonOf({ settings, steppedUp: true })).toBeUndefined()
    expect(reasonOf({ settings, action: "reject" })).toBeUndefined()
    expect(reasonOf({ settings, action: "view" })).toBeUndefined()
  })

  it("viewing needs neither a post's origin nor its token, but the same person checks", () => {
    expect(reasonOf({ action: "view", ownOrigin: false, csrf: false })).toBeUndefined()
    expect(reasonOf({ action: "view", bearer: true })).toBe("api_token")
    expect(reasonOf({ action: "view", reviewer: { ...reviewer, scopes: new Set() } })).toBe("not_security_reviewer")
  })

  it("the first refusal wins: origin, then token, then who, then the proposal", () => {
    expect(reasonOf({ ownOrigin: false, bearer: true, reviewer: undefined })).toBe("foreign_origin")
    expect(reasonOf({ bearer: true, reviewer: undefined })).toBe("api_token")
    expect(reasonOf({ csrf: false, reviewer: { ...reviewer, scopes: new Set() } })).toBe("csrf")
    expect(
      reasonOf({
        reviewer: { ...reviewer, scopes: new Set() },
        proposal: { ...proposal, proposed_by: { user_id: "u-reviewer", name: "Sam" } }
      })
    ).toBe("not_security_reviewer")
    expect(reviewChecks.map((check) => check.name)).toEqual([
      "checkOrigin",
      "checkNoApiToken",
      "checkSignedIn",
      "checkCsrf",
      "checkActive",
      "checkSecurityScope",
      "checkListed",
      "checkNotProposer",
      "checkNotIssuedByProposer",
      "checkSteppedUp"
    ])
  })
})
