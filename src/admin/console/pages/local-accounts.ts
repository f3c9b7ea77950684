import { Effect } from "effect"
import { Html, html } from "../../../auth/pages/html.js"
import {
  type IssuedLink,
  type LocalAccount,
  LocalAccountAdmin,
  type LocalAccountRefused,
  localAccountRefusalStatus
} from "../../../identity/local/account-admin.js"
import { MAX_DISPLAY_NAME, MAX_LOCAL_USERNAME } from "../../../identity/local/usernames.js"
import type { Actor } from "../../../policy/writes.js"
import { linkRecord, localAccountRecord, publicOrigin } from "../../local-accounts.js"
import { ConsoleProblem, type ConsoleRequest, type ConsoleRoute, type ConsoleSection } from "../route.js"
import { formRevision } from "./forms.js"

/**
 * The console's local accounts (docs/local-accounts.md, docs/console.md): the list, the create form
 * (the enrolment link shown once), and disable, enable and reset buttons, each form carrying the
 * revision it was rendered with. Every action is the LocalAccountAdmin call the Management API makes.
 */
const BASE = "/console/local-accounts"
const PAGE_SIZE = 100

const problem = (refused: LocalAccountRefused) =>
  Effect.fail(new ConsoleProblem({ status: localAccountRefusalStatus[refused.code], message: refused.description }))

const actorOf = (request: ConsoleRequest): Actor => ({ userId: request.admin.userId, kind: request.admin.kind })

/** The single value of a form field, or a 400 naming it. */
const field = (request: ConsoleRequest, name: string) => {
  const values = request.form.getAll(name)
  return values.length === 1
    ? Effect.succeed(values[0]!)
    : Effect.fail(new ConsoleProblem({ status: 400, message: `${name}: give it once.` }))
}

const statusText = { waiting_for_enrolment: "Waiting for enrolment", enabled: "Enabled", disabled: "Disabled" }

/** One button of a row: a form posting to the action with the revision the row was rendered with. */
const button = (request: ConsoleRequest, id: string, revision: string, action: string, label: string) =>
  html`<form class="inline" method="post" action="${BASE}/${encodeURIComponent(id)}/${action}">${request.csrfField}<input type="hidden" name="revision" value="${revision}"><button type="submit">${label}</button></form>`

const row = (request: ConsoleRequest, account: LocalAccount) => {
  const record = localAccountRecord(account)
  const toggle =
    record.status === "disabled"
      ? button(request, record.id, record.revision, "enable", `Enable ${record.username}`)
      : button(request, record.id, record.revision, "disable", `Disable ${record.username}`)
  const resets =
    record.status === "disabled"
      ? new Html("")
      : html`${button(request, record.id, record.revision, "reset-password", `Reset password of ${record.username}`)}${button(request, record.id, record.revision, "reset-mfa", `Reset second factor of ${record.username}`)}`
  return html`<tr><td>${record.username}</td><td>${record.display_name}</td><td>${statusText[record.status]}</td><td>${record.enrolment_link_expires_at ?? "—"}</td><td>${toggle}${resets}</td></tr>`
}

const createForm = (request: ConsoleRequest) =>
  html`<section aria-labelledby="create-heading"><h2 id="create-heading">Create a local account</h2>
<form method="post" action="${BASE}">${request.csrfField}
<label for="username">User name</label><input type="text" id="username" name="username" required maxlength="${String(MAX_LOCAL_USERNAME)}" autocomplete="off">
<label for="display_name">Display name</label><input type="text" id="display_name" name="display_name" required maxlength="${String(MAX_DISPLAY_NAME)}" autocomplete="off">
<button type="submit">Create and get the enrolment link</button></form></section>`

const listRoute: ConsoleRoute = {
  method: "GET",
  path: BASE,
  handler: (request) =>
    Effect.gen(function* () {
      const cursor = request.query.get("cursor") ?? ""
      const page = yield* (yield* LocalAccountAdmin).list(cursor, PAGE_SIZE)
      const rows = page.accounts.map((account) => row(request, account))
      const next =
        page.nextCursor === undefined
          ? new Html("")
          : html`<p><a href="${BASE}?cursor=${encodeURIComponent(page.nextCursor)}">Next page</a></p>`
      return {
        _tag: "Page" as const,
        title: "Local accounts",
        body: html`<p class="muted">Accounts people are given: each sets a password and an authenticator through a one-time enrolment link (valid 24 hours). The built-in administrator is recovered with <code>gateway init-admin --reset</code>.</p>
${
  rows.length === 0
    ? html`<p>No local accounts yet.</p>`
    : html`<table><caption>Local accounts</caption><thead><tr><th scope="col">User name</th><th scope="col">Display name</th><th scope="col">Status</th><th scope="col">Link expires</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>`
}${next}${createForm(request)}`
      }
    })
}

/** The page that shows a new enrolment link, this once. */
const linkPage = (title: string, issued: IssuedLink, origin: string) => {
  const record = linkRecord(issued, origin)
  return {
    _tag: "Page" as const,
    title,
    body: html`<p>Give this link to <strong>${record.account.display_name}</strong> (user name <code>${record.account.username}</code>). It works once, until ${record.enrolment_expires_at}; it is not shown again.</p>
<p><label for="enrolment-url">Enrolment link</label><input type="text" id="enrolment-url" readonly value="${record.enrolment_url}"></p>
<p><a href="${BASE}">Back to local accounts</a></p>`
  }
}

const createRoute: ConsoleRoute = {
  method: "POST",
  path: BASE,
  handler: (request) =>
    Effect.gen(function* () {
      const username = yield* field(request, "username")
      const displayName = yield* field(request, "display_name")
      const issued = yield* (yield* LocalAccountAdmin)
        .create(actorOf(request), { username, displayName })
        .pipe(Effect.catchTag("LocalAccountRefused", problem))
      return linkPage("Local account created", issued, yield* publicOrigin)
    })
}

const statusRoute = (action: "disable" | "enable"): ConsoleRoute => ({
  method: "POST",
  path: `${BASE}/:id/${action}`,
  handler: (request) =>
    Effect.gen(function* () {
      const revision = yield* formRevision(request.form)
      const accounts = yield* LocalAccountAdmin
      const id = request.params["id"] ?? ""
      const account = yield* accounts[action](actorOf(request), id, revision).pipe(
        Effect.catchTag("LocalAccountRefused", problem)
      )
      return {
        _tag: "SeeOther" as const,
        location: BASE,
        notice: `${account.user.username ?? ""} ${action === "disable" ? "disabled" : "enabled"}.`
      }
    })
})

const resetRoute = (action: "reset-password" | "reset-mfa"): ConsoleRoute => ({
  method: "POST",
  path: `${BASE}/:id/${action}`,
  handler: (request) =>
    Effect.gen(function* () {
      const revision = yield* formRevision(request.form)
      const accounts = yield* LocalAccountAdmin
      const id = request.params["id"] ?? ""
      const reset = action === "reset-password" ? accounts.resetPassword : accounts.resetMfa
      const issued = yield* reset(actorOf(request), id, revision).pipe(Effect.catchTag("LocalAccountRefused", problem))
      return linkPage(
        action === "reset-password" ? "Password reset" : "Second factor reset",
        issued,
        yield* publicOrigin
      )
    })
})

export const localAccountsSection: ConsoleSection = {
  nav: [{ label: "Local accounts", path: BASE }],
  routes: [
    listRoute,
    createRoute,
    statusRoute("disable"),
    statusRoute("enable"),
    resetRoute("reset-password"),
    resetRoute("reset-mfa")
  ]
}
