import type { ClientGrantRow } from "../../store/client-grants.js"
import { Html, html, page } from "./html.js"

/** `GET /sso/grants`: the applications a person allowed to act for them, each revocable. */
export const grantsPage = (
  displayName: string,
  grants: ReadonlyArray<ClientGrantRow>,
  csrf: string,
  consentEnabled: boolean
) =>
  page(
    "Applications you allowed",
    html`<h1>Applications you allowed</h1><p class="muted">Signed in as ${displayName}.</p>
${consentEnabled ? new Html("") : html`<p class="muted">This gateway does not ask for consent (client_authorization is off).</p>`}
${
  grants.length === 0
    ? html`<p id="no-grants">No application has access.</p>`
    : html`<table>${grants.map(
        (
          grant
        ) => html`<tr><td><strong>${grant.client_id}</strong><br><span class="muted">${grant.scope === "" ? "no scopes" : grant.scope}</span></td>
<td><form method="post" action="/sso/grants/revoke"><input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="client_id" value="${grant.client_id}"><button type="submit">Revoke</button></form></td></tr>`
      )}</table>`
}`
  )
