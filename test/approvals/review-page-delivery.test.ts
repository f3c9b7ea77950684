/**
 * The approval review page flags an approval whose webhook delivery is failing
 * (docs/approvals.md, "Webhooks": "When it fails"), without the body or the secret.
 */
import { describe, expect, it } from "vitest"
import { detailPage } from "../../src/approvals/review/pages.js"
import type { ApprovalRow } from "../../src/store/approvals.js"

const at = new Date("2026-11-26T12:00:00.000Z")
const row: ApprovalRow = {
  id: "apr_page",
  operation_key: null,
  issuer: "https://gw.example.com/sso",
  subject: "u1",
  requester_id: "u1",
  client_id: null,
  backend: "ops",
  tool: "deploy",
  exposed_name: "ops__deploy",
  source_hash: "s",
  intent_sealed: null,
  intent_hash: "0".repeat(64),
  required_approvals: 1,
  require_step_up: false,
  approvers: [],
  risk: "base",
  state: "pending",
  created_at: at,
  expires_at: at,
  approved_at: null,
  execute_by: null,
  finished_at: null,
  decided_by: null,
  result_sealed: null,
  revision: 1
}
const actions = {
  csrf: "c",
  approve: false,
  stepUpUrl: undefined,
  approveBlocked: undefined,
  reject: false,
  revoke: false
}
const text = (response: ReturnType<typeof detailPage>) =>
  new TextDecoder().decode((response.body as { readonly body: Uint8Array }).body)

describe("review page: webhook delivery", () => {
  it("says when an event of this approval is failing delivery: attempts, error class, next attempt", () => {
    const failing = {
      seq: 7,
      event_id: "e",
      approval_id: "apr_page",
      attempts: 3,
      failing_since: at,
      last_attempt_at: at,
      next_attempt_at: new Date("2026-11-26T12:00:20.000Z"),
      last_error: "http_503"
    }
    const shown = text(detailPage({ row, requester: "Alice", mine: false }, [], "{}", actions, undefined, [failing]))
    expect(shown).toContain('id="delivery-failing"')
    expect(shown).toContain("3 attempt(s), last error <code>http_503</code>; next attempt 2026-11-26 12:00:20 UTC")
  })

  it("says nothing when deliveries are fine", () => {
    const shown = text(detailPage({ row, requester: "Alice", mine: false }, [], "{}", actions, undefined))
    expect(shown).not.toContain("delivery-failing")
  })
})

describe("review page: people as named", () => {
  it("shows a requester's and a reviewer's name (from any identity provider) with hidden characters escaped", () => {
    const vote = { reviewer_name: "Bob\u200b", voted_at: at } as unknown as Parameters<typeof detailPage>[1][number]
    const shown = text(
      detailPage(
        { row: { ...row, client_id: "cli\u2066" }, requester: "Mallory \u202e(nimda)", mine: false },
        [vote],
        "{}",
        actions,
        undefined
      )
    )
    expect(shown).toContain("Mallory \\u202e(nimda)")
    expect(shown).toContain("via cli\\u2066")
    expect(shown).toContain("Bob\\u200b,")
    expect(shown).not.toMatch(/[\u202e\u2066\u200b]/)
  })
})
