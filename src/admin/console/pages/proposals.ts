import { Effect, Option } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { Config } from "../../../config/service.js"
import {
  ConfigChanges,
  type ProposalState,
  type ProposalSummary,
  proposalStateNames
} from "../../../sources/changes.js"
import { kindNames } from "../../../sources/definitions.js"
import { reviewUrl } from "../../../sources/review-url.js"
import { decodePosition, encodePosition } from "../../cursor.js"
import type { ConsoleAnswer, ConsoleRoute, ConsoleSection } from "../route.js"
import { jsonBlock, param, problem, shown, when } from "./parts.js"
import { sourcePath } from "./tool-sources.js"

/**
 * Configuration proposals (docs/console.md, "Tool sources, approvals and audit"): the list by state,
 * newest first, a page at a time, and one proposal with its diff against what is active, secrets masked (ConfigChanges, as the
 * Management API reads them). The console never decides a proposal: a security reviewer does, on the
 * review pages of the public listener, which each pending proposal links to.
 */

const states = Object.keys(proposalStateNames) as ReadonlyArray<ProposalState>

export const PROPOSALS_PAGE = 50

const page = (title: string, body: Html): ConsoleAnswer => ({ _tag: "Page", title, body })

const subjectOf = (proposal: ProposalSummary) =>
  html`${proposal.action === "create" ? "Create" : "Update"} ${kindNames[proposal.kind].one} <code>${shown(proposal.target_id)}</code>`

const listRoute: ConsoleRoute = {
  method: "GET",
  path: "/console/proposals",
  handler: (request) =>
    Effect.gen(function* () {
      const given = request.query.getAll("state")
      if (given.length > 1) return yield* problem(400, "state: give it once.")
      const state = given[0] === undefined || given[0] === "" ? undefined : given[0]
      if (state !== undefined && !states.includes(state as ProposalState)) {
        return yield* problem(400, `state: expected one of ${states.join(", ")}.`)
      }
      const afters = request.query.getAll("after")
      if (afters.length > 1) return yield* problem(400, "after: give it once.")
      const text = afters[0] ?? ""
      const position = text === "" ? undefined : decodePosition(text)
      if (text !== "" && position === undefined) return yield* problem(400, "after: not a position this list gave out.")
      const found = yield* (yield* ConfigChanges).list({
        ...(state === undefined ? {} : { state: state as ProposalState }),
        limit: PROPOSALS_PAGE + 1,
        ...(position === undefined ? {} : { before: { createdAt: position.at, id: position.id } })
      })
      const items = found.slice(0, PROPOSALS_PAGE)
      const last = items.at(-1)
      const next =
        found.length > PROPOSALS_PAGE && last !== undefined
          ? `/console/proposals?${new URLSearchParams({
              ...(state === undefined ? {} : { state }),
              after: encodePosition({ at: new Date(last.created_at), id: last.id })
            })}`
          : undefined
      return page(
        "Configuration proposals",
        html`<form method="get" action="/console/proposals"><label for="state">State</label>
<select id="state" name="state"><option value="">any</option>${states.map(
          (each) =>
            html`<option value="${each}"${each === state ? html` selected` : ""}>${proposalStateNames[each]}</option>`
        )}</select> <button type="submit">Show</button></form>
${
  items.length === 0
    ? html`<p id="no-proposals">No proposal${state === undefined ? "" : ` ${proposalStateNames[state as ProposalState]}`}.</p>`
    : html`<table id="proposals"><caption>Proposals, newest first</caption>
<thead><tr><th scope="col">Change</th><th scope="col">State</th><th scope="col">Proposed by</th><th scope="col">Proposed</th></tr></thead>
<tbody>${items.map(
        (
          item
        ) => html`<tr><th scope="row"><a href="/console/proposals/${encodeURIComponent(item.id)}">${subjectOf(item)}</a></th>
<td data-state="${item.state}">${proposalStateNames[item.state]}</td><td>${shown(item.proposed_by.name)}</td><td>${when(item.created_at)}</td></tr>`
      )}</tbody></table>`
}
${next === undefined ? "" : html`<p><a id="older" href="${next}">Older proposals</a></p>`}`
      )
    })
}

const showRoute: ConsoleRoute = {
  method: "GET",
  path: "/console/proposals/:id",
  handler: (request) =>
    Effect.gen(function* () {
      const id = param(request.params, "id")
      const found = yield* (yield* ConfigChanges).show(id)
      if (Option.isNone(found)) return yield* problem(404, `No proposal "${id}".`)
      const proposal = found.value
      const { config } = yield* Config
      return page(
        "Configuration proposal",
        html`<p>${subjectOf(proposal)}</p>
<dl><dt>State</dt><dd data-state="${proposal.state}">${proposalStateNames[proposal.state]}</dd>
<dt>Proposed by</dt><dd>${shown(proposal.proposed_by.name)} (${shown(proposal.proposed_by.user_id)}), ${when(proposal.created_at)}</dd>
${proposal.decided_by === undefined ? "" : html`<dt>Decided by</dt><dd>${shown(proposal.decided_by.name)}, ${when(proposal.decided_at)}</dd>`}
${proposal.failure === undefined ? "" : html`<dt>Failure</dt><dd>${shown(proposal.failure)}</dd>`}</dl>
${
  proposal.state === "pending_approval"
    ? html`<p id="review">A security reviewer &mdash; someone other than the proposer &mdash; approves or rejects it on the review page: <a href="${reviewUrl(config, proposal.id)}">review this proposal</a>. The console cannot approve.</p>`
    : ""
}
<section aria-labelledby="diff-heading"><h2 id="diff-heading">Changes against what is active</h2>
<p class="muted">Secrets are masked: a changed secret shows only that it changed.</p>
${
  proposal.diff.length === 0
    ? html`<p>No difference.</p>`
    : html`<table id="diff"><caption>Changes by JSON Pointer</caption>
<thead><tr><th scope="col">Field</th><th scope="col">Active</th><th scope="col">Proposed</th></tr></thead>
<tbody>${proposal.diff.map(
        (entry) =>
          html`<tr><th scope="row"><code>${shown(entry.path || "/")}</code></th><td>${jsonBlock(entry.before)}</td><td>${jsonBlock(entry.after)}</td></tr>`
      )}</tbody></table>`
}</section>
<p>${proposal.state === "applied" ? html`<a href="${sourcePath(proposal.kind, proposal.target_id)}">The ${kindNames[proposal.kind].one} as it is now</a> · ` : ""}<a href="/console/proposals">All proposals</a></p>`
      )
    })
}

export const proposalsSection: ConsoleSection = {
  nav: [{ label: "Configuration proposals", path: "/console/proposals" }],
  routes: [listRoute, showRoute]
}
