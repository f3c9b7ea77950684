import { Effect, Option } from "effect"
import { approvalUrlOf } from "../../../approvals/answers.js"
import { Approvals } from "../../../approvals/service.js"
import { type Html, html } from "../../../auth/pages/html.js"
import { Config } from "../../../config/service.js"
import type { ApprovalRow } from "../../../store/approvals.js"
import { UserRepo } from "../../../store/users.js"
import { deliveryStatus } from "../../approval-delivery.js"
import { decodePosition, encodePosition } from "../../cursor.js"
import type { ConsoleAnswer, ConsoleRoute, ConsoleSection } from "../route.js"
import { problem, shown, when } from "./parts.js"

/**
 * Write approvals (docs/console.md, "Tool sources, approvals and audit"): the open ones (pending or
 * approved), oldest first and paged, and the most recently finished, each linked to its review page on
 * the public listener — the console never votes — and how the approval webhook and the audit archive are keeping up (the same
 * figures as `GET /api/v1/approvals/delivery`).
 */

export const APPROVALS_PAGE = 50
/** How many of the most recently finished approvals the page shows. */
export const RECENT_APPROVALS = 20

const page = (title: string, body: Html): ConsoleAnswer => ({ _tag: "Page", title, body })

/** Who asked, as the review pages name them: display name (username), else the token's subject. */
const requesterNames = (rows: ReadonlyArray<ApprovalRow>) =>
  Effect.gen(function* () {
    const users = yield* UserRepo
    const names = new Map<string, string>()
    for (const id of new Set(rows.flatMap((row) => (row.requester_id === null ? [] : [row.requester_id])))) {
      const user = yield* users.findById(id)
      if (Option.isSome(user)) {
        const found = user.value
        names.set(id, found.username === null ? found.display_name : `${found.display_name} (${found.username})`)
      }
    }
    return (row: ApprovalRow) => (row.requester_id === null ? undefined : names.get(row.requester_id)) ?? row.subject
  })

const queueRow = (
  name: string,
  report: {
    readonly enabled: boolean
    readonly pending: number | null
    readonly failed: number | null
    readonly oldest_pending_age_seconds: number | null
    readonly last_error: string | null
  }
) =>
  html`<tr><th scope="row">${name}</th><td>${report.enabled ? "on" : "off"}</td><td>${report.pending ?? "—"}</td><td>${report.failed ?? "—"}</td>
<td>${report.oldest_pending_age_seconds === null ? "—" : `${report.oldest_pending_age_seconds} s`}</td><td>${report.last_error ?? "—"}</td></tr>`

const listRoute: ConsoleRoute = {
  method: "GET",
  path: "/console/approvals",
  handler: (request) =>
    Effect.gen(function* () {
      const given = request.query.getAll("after")
      if (given.length > 1) return yield* problem(400, "after: give it once.")
      const text = given[0] ?? ""
      const position = text === "" ? undefined : decodePosition(text)
      const after = position === undefined ? undefined : { createdAt: position.at, id: position.id }
      if (text !== "" && position === undefined) return yield* problem(400, "after: not a position this list gave out.")
      const rows = yield* (yield* Approvals).openPage(APPROVALS_PAGE + 1, after)
      const shownRows = rows.slice(0, APPROVALS_PAGE)
      const recent = yield* (yield* Approvals).recentlyFinished(RECENT_APPROVALS)
      const requester = yield* requesterNames([...shownRows, ...recent])
      const delivery = yield* deliveryStatus
      const { config } = yield* Config
      return page(
        "Write approvals",
        html`<section aria-labelledby="open-heading"><h2 id="open-heading">Open approvals</h2>
<p class="muted">Reviewers decide on the review pages; the console only shows them.</p>
${
  shownRows.length === 0
    ? html`<p id="no-approvals">No approval is ${after === undefined ? "open" : "open after these"}.</p>`
    : html`<table id="approvals"><caption>Pending and approved write approvals, oldest first</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Requested by</th><th scope="col">Requested</th><th scope="col">Expires</th><th scope="col">Approvals needed</th></tr></thead>
<tbody>${shownRows.map(
        (
          row
        ) => html`<tr><th scope="row"><a href="${approvalUrlOf(config.server.public_url, row.id)}">${shown(row.exposed_name)}</a></th>
<td data-state="${row.state}">${row.state}</td><td>${shown(requester(row))}</td><td>${when(row.created_at)}</td><td>${when(row.expires_at)}</td><td>${row.required_approvals}</td></tr>`
      )}</tbody></table>`
}
${rows.length > APPROVALS_PAGE ? html`<p><a id="next" href="/console/approvals?after=${encodePosition({ at: shownRows.at(-1)!.created_at, id: shownRows.at(-1)!.id })}">Next approvals</a></p>` : ""}
</section>
<section aria-labelledby="recent-heading"><h2 id="recent-heading">Recently finished</h2>
${
  recent.length === 0
    ? html`<p id="no-recent">No approval has finished yet.</p>`
    : html`<table id="recent"><caption>The ${RECENT_APPROVALS} most recently finished write approvals, newest first</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">Outcome</th><th scope="col">Requested by</th><th scope="col">Finished</th></tr></thead>
<tbody>${recent.map(
        (
          row
        ) => html`<tr><th scope="row"><a href="${approvalUrlOf(config.server.public_url, row.id)}">${shown(row.exposed_name)}</a></th>
<td data-state="${row.state}">${row.state}</td><td>${shown(requester(row))}</td><td>${when(row.finished_at)}</td></tr>`
      )}</tbody></table>`
}</section>
<section aria-labelledby="delivery-heading"><h2 id="delivery-heading">Webhook and archive delivery</h2>
<table id="delivery"><caption>Delivery queues</caption>
<thead><tr><th scope="col">Queue</th><th scope="col">Enabled</th><th scope="col">Pending</th><th scope="col">Failed</th><th scope="col">Oldest pending</th><th scope="col">Last error</th></tr></thead>
<tbody>${queueRow("Approval webhook", delivery.notifications)}${queueRow("Audit archive", delivery.archive)}</tbody></table></section>`
      )
    })
}

export const approvalsSection: ConsoleSection = {
  nav: [{ label: "Write approvals", path: "/console/approvals" }],
  routes: [listRoute]
}
