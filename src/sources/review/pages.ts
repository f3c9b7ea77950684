import { html, page } from "../../auth/pages/html.js"
import { needsCareful, visibleText } from "../../auth/pages/visible-text.js"
import {
  type Person,
  type ProposalDetail,
  type ProposalState,
  type ProposalSummary,
  proposalStateNames
} from "../changes.js"
import type { SourceKind } from "../schema.js"
import { proposalPath, reviewPaths } from "./paths.js"

/**
 * The configuration review pages (docs/tool-sources.md, "Configuration review"): server-rendered,
 * every value escaped by `html`, hidden and direction-changing characters shown as `\uXXXX`; forms
 * that work without JavaScript (the pages' CSP runs none), under the /sso pages' style and headers.
 */

const kindNames: Readonly<Record<SourceKind, string>> = {
  backend: "Backend",
  http_tool: "HTTP tool",
  openapi_import: "OpenAPI import",
  tool_group: "Tool group"
}

const when = (iso: string | undefined) => (iso === undefined ? "—" : `${iso.replace("T", " ").slice(0, 19)} UTC`)

const personText = (person: Person) => visibleText(`${person.name} (${person.user_id})`)

const stateLabel = (state: ProposalState) =>
  html`<span class="state-${state}" data-state="${state}">${proposalStateNames[state] ?? state}</span>`

const subjectOf = (proposal: ProposalSummary) =>
  html`${proposal.action === "create" ? "Create" : "Update"} ${kindNames[proposal.kind] ?? proposal.kind} <code>${visibleText(proposal.target_id)}</code>`

/** `GET /auth/reviews`: the proposals waiting for a decision. */
export const listPage = (reviewerName: string, proposals: ReadonlyArray<ProposalSummary>, mine: string) =>
  page(
    "Configuration review",
    html`<header><h1>Configuration review</h1><p class="muted">Signed in as ${visibleText(reviewerName)}.</p></header>
<section aria-labelledby="pending-heading"><h2 id="pending-heading">Waiting for review</h2>
${
  proposals.length === 0
    ? html`<p id="no-proposals">No configuration change is waiting for review.</p>`
    : html`<ul id="proposals">${proposals.map(
        (proposal) => html`<li><a href="${proposalPath(proposal.id)}">${subjectOf(proposal)}</a><br>
<span class="muted">proposed by ${personText(proposal.proposed_by)}${proposal.proposed_by.user_id === mine ? " (you)" : ""} · ${when(proposal.created_at)}</span></li>`
      )}</ul>`
}</section>`
  )

/** One value of the diff as reviewers read it: its JSON, hidden characters visible; absent as such. */
const valueText = (value: unknown) =>
  value === undefined
    ? html`<span class="muted">(absent)</span>`
    : html`<pre dir="ltr">${visibleText(JSON.stringify(value, null, 2))}</pre>`

const hasHidden = (detail: ProposalDetail) =>
  detail.diff.some(
    (entry) =>
      needsCareful(entry.path) || [entry.before, entry.after].some((value) => needsCareful(JSON.stringify(value) ?? ""))
  )

export interface ProposalActions {
  readonly csrf: string
  /** Approve is offered: the reviewer may, any step-up is done, the proposal waits. */
  readonly approve: boolean
  /** Step-up is needed first: the link that starts it. */
  readonly stepUpUrl: string | undefined
  /** Why approving (or deciding at all) is not offered, when the proposal waits. */
  readonly blocked: string | undefined
  readonly reject: boolean
}

const button = (id: string, action: "approve" | "reject", label: string, csrf: string) =>
  html`<form method="post" action="${proposalPath(id)}/${action}" class="inline"><input type="hidden" name="csrf" value="${csrf}">
<button type="submit" id="${action}">${label}</button></form>`

/** What became of a decided proposal, in words: applied, or why it was not. */
const outcomeOf = (proposal: ProposalSummary) => {
  switch (proposal.state) {
    case "applied":
      return html`<p class="notice" id="outcome" role="status">Applied: the change is active.</p>`
    case "failed":
      return html`<p class="error" id="outcome" role="alert">The application failed${proposal.failure === undefined ? "" : html`: ${visibleText(proposal.failure)}`}. Nothing was changed; a fresh proposal is needed.</p>`
    case "rejected":
      return html`<p class="notice" id="outcome" role="status">Rejected: nothing was changed.</p>`
    case "invalidated":
      return html`<p class="error" id="outcome" role="status">A restart invalidated this proposal before it was decided; a fresh proposal is needed.</p>`
    case "unknown":
      return html`<p class="error" id="outcome" role="alert">The gateway stopped while applying this change: whether it took effect must be inspected.</p>`
    default:
      return html``
  }
}

/** `GET /auth/reviews/{id}`: what would change, and the buttons this reviewer may use. */
export const proposalPage = (detail: ProposalDetail, actions: ProposalActions, notice: string | undefined) =>
  page(
    `Configuration change ${detail.id}`,
    html`<header><h1>Configuration change</h1><p><a href="${reviewPaths.list}">All proposals</a></p></header>
${notice === undefined ? "" : html`<p class="notice" id="notice" role="status">${notice}</p>`}
${outcomeOf(detail)}
<section aria-labelledby="summary-heading"><h2 id="summary-heading">Summary</h2>
<table id="proposal">
<tr><th scope="row">Change</th><td id="subject">${subjectOf(detail)}</td></tr>
<tr><th scope="row">State</th><td id="state">${stateLabel(detail.state)}</td></tr>
<tr><th scope="row">Proposed by</th><td id="proposer">${personText(detail.proposed_by)}</td></tr>
<tr><th scope="row">Proposed</th><td>${when(detail.created_at)}</td></tr>
${detail.decided_by === undefined ? "" : html`<tr><th scope="row">Decided by</th><td id="decider">${personText(detail.decided_by)}, ${when(detail.decided_at)}</td></tr>`}
</table></section>
<section aria-labelledby="diff-heading"><h2 id="diff-heading">What changes</h2>
<p class="muted">Against what is active now; secrets are shown only as configured or not.</p>
${
  detail.diff.length === 0
    ? html`<p id="no-diff">Nothing differs from what is active.</p>`
    : html`<table id="diff"><caption class="muted">${detail.diff.length} change(s)</caption>
<thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
<tbody>${detail.diff.map(
        (entry) =>
          html`<tr><th scope="row"><code class="exact">${visibleText(entry.path === "" ? "/" : entry.path)}</code></th><td>${valueText(entry.before)}</td><td>${valueText(entry.after)}</td></tr>`
      )}</tbody></table>`
}
${hasHidden(detail) ? html`<p class="error" id="hidden-characters" role="alert">The change contains invisible or direction-changing characters (shown as \\uXXXX) or right-to-left letters (shown in stored order, left to right): read it carefully.</p>` : ""}
</section>
${
  detail.state === "pending_approval"
    ? html`<section aria-labelledby="decide-heading"><h2 id="decide-heading">Decision</h2>
${actions.approve ? button(detail.id, "approve", "Approve and apply", actions.csrf) : ""}
${actions.stepUpUrl === undefined ? "" : html`<p><a class="button" id="step-up" href="${actions.stepUpUrl}">Confirm with your identity provider to approve</a></p>`}
${actions.reject ? button(detail.id, "reject", "Reject", actions.csrf) : ""}
${actions.blocked === undefined ? "" : html`<p class="muted" id="blocked">${actions.blocked}</p>`}
</section>`
    : ""
}`
  )
