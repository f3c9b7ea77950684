import { Html, html, page } from "../../auth/pages/html.js"
import { shownNeedsCare, visibleText } from "../../auth/pages/visible-text.js"
import type { ApprovalRow, VoteRow } from "../../store/approvals.js"
import type { FailingDelivery } from "../../store/notification-deliveries.js"

/** One approval as the review pages show it. */
export interface ReviewItem {
  readonly row: ApprovalRow
  readonly requester: string
  readonly mine: boolean
}

const when = (date: Date | null) => (date === null ? "—" : `${date.toISOString().replace("T", " ").slice(0, 19)} UTC`)

const stateLabel = (row: ApprovalRow) =>
  html`<span class="state-${row.state}" data-state="${row.state}">${row.state}</span>`

/** `GET /sso/approvals`: what this reviewer may act on, and their own open requests. */
export const listPage = (name: string, approver: boolean, items: ReadonlyArray<ReviewItem>) =>
  page(
    "Write approvals",
    html`<h1>Write approvals</h1><p class="muted">Signed in as ${name}.${approver ? "" : " You do not hold the approver role: you see only your own requests."}</p>
${
  items.length === 0
    ? html`<p id="no-approvals">Nothing is waiting for review.</p>`
    : html`<table id="approvals">${items.map(
        (item) => html`<tr><td><a href="/sso/approvals/${item.row.id}"><strong>${item.row.exposed_name}</strong></a>
${item.mine ? html` <span class="muted">(your request)</span>` : ""}<br>
<span class="muted">by ${visibleText(item.requester)} · ${stateLabel(item.row)} · ${item.row.required_approvals === 2 ? "two reviewers" : "one reviewer"}${item.row.require_step_up ? " · step-up" : ""} · expires ${when(item.row.expires_at)}</span></td></tr>`
      )}</table>`
}`
  )

export interface DetailActions {
  readonly csrf: string
  /** Approve is offered (the reviewer may, and any step-up is done). */
  readonly approve: boolean
  /** Step-up is needed first: the link that starts it. */
  readonly stepUpUrl: string | undefined
  /** Why approving is not offered, when it is not. */
  readonly approveBlocked: string | undefined
  readonly reject: boolean
  readonly revoke: boolean
}

const button = (id: string, action: string, label: string, csrf: string, extra: Html = new Html("")) =>
  html`<form method="post" action="/sso/approvals/${id}/${action}" class="inline"><input type="hidden" name="csrf" value="${csrf}">${extra}
<button type="submit" id="${action}">${label}</button></form>`

/** `GET /sso/approvals/{id}`: everything a reviewer decides on, and the buttons they may use. */
export const detailPage = (
  item: ReviewItem,
  votes: ReadonlyArray<VoteRow>,
  args: string | undefined,
  actions: DetailActions,
  notice: string | undefined,
  deliveryFailures: ReadonlyArray<FailingDelivery> = []
) => {
  const { row } = item
  return page(
    `Approval for ${row.exposed_name}`,
    html`<h1>Write approval</h1>
${notice === undefined ? "" : html`<p class="notice" id="notice">${notice}</p>`}
${deliveryFailures.map((failing) => html`<p class="error" id="delivery-failing">The approval webhook could not deliver an event of this approval yet: ${failing.attempts} attempt(s), last error <code>${failing.last_error}</code>; next attempt ${when(failing.next_attempt_at)}. Reviewers may not have been notified.</p>`)}
<table id="approval">
<tr><td>Tool</td><td id="tool"><code>${row.tool}</code> on backend <code>${row.backend}</code></td></tr>
<tr><td>State</td><td id="state">${stateLabel(row)}</td></tr>
<tr><td>Requested by</td><td id="requester">${visibleText(item.requester)}${row.client_id === null ? "" : html` <span class="muted">via ${visibleText(row.client_id)}</span>`}</td></tr>
<tr><td>Needs</td><td id="needs">${row.required_approvals === 2 ? "two distinct reviewers" : "one reviewer"}${row.require_step_up ? ", each after a fresh sign-in with stronger authentication" : ""}</td></tr>
<tr><td>Risk</td><td id="risk">${row.risk}</td></tr>
<tr><td>Approvals</td><td id="votes">${votes.length} of ${row.required_approvals}${votes.map((vote) => html`<br><span class="muted">${visibleText(vote.reviewer_name)}, ${when(vote.voted_at)}</span>`)}</td></tr>
<tr><td>Requested</td><td>${when(row.created_at)}</td></tr>
<tr><td>${row.state === "approved" ? "Execute by" : "Expires"}</td><td>${when(row.state === "approved" ? row.execute_by : row.expires_at)}</td></tr>
</table>
<h2>Arguments</h2>
${args === undefined ? html`<p class="muted">Not available: it cannot be approved.</p>` : html`<pre id="arguments" dir="ltr">${args}</pre>`}
${args !== undefined && shownNeedsCare(args) ? html`<p class="error" id="hidden-characters">The arguments contain escapes, invisible or direction-changing characters (shown as \\uXXXX) or right-to-left letters (shown in stored order, left to right): read them carefully.</p>` : ""}
<p class="muted">Intent <code>${row.intent_hash.slice(0, 16)}</code>: your approval counts for exactly these arguments.</p>
${actions.approve ? button(row.id, "approve", "Approve", actions.csrf, html`<input type="hidden" name="intent" value="${row.intent_hash}">`) : ""}
${actions.stepUpUrl === undefined ? "" : html`<p><a class="button" id="step-up" href="${actions.stepUpUrl}">Confirm with your identity provider to approve</a></p>`}
${actions.approveBlocked === undefined ? "" : html`<p class="muted" id="approve-blocked">${actions.approveBlocked}</p>`}
${actions.reject ? button(row.id, "reject", "Reject", actions.csrf) : ""}
${actions.revoke ? button(row.id, "revoke", "Revoke", actions.csrf) : ""}
<p><a href="/sso/approvals">All approvals</a></p>`
  )
}
