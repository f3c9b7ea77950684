import { Effect } from "effect"
import { type Html, html } from "../../../auth/pages/html.js"
import { type ProviderRefused, probeDraft, replaceSettings, testDraft } from "../../../identity/providers/actions.js"
import { ConnectionDraftBody } from "../../../identity/providers/draft.js"
import { IdentityProviders } from "../../../identity/providers/service.js"
import { IdentityProvidersBody, type IdentityProvidersRecord } from "../../../identity/providers/settings.js"
import { requestId } from "../../errors.js"
import { ConsoleProblem, type ConsoleRequest, type ConsoleRoute } from "../route.js"
import { checked, checkedForm, decodeFields, formRevision, lines } from "./forms.js"

/**
 * The console's identity providers (docs/console.md, "Identities and access"): the stored OIDC and
 * LDAP connections (secrets only as configured or not), one form that saves both whole at the revision
 * it was rendered with, and buttons of the same form that probe or test the connection as drafted
 * (src/identity/providers/actions.ts, as `PUT`, `POST …/probe` and `POST …/test` of the Management API).
 * Secrets typed into the form are never written back into a page.
 */

const PATH = "/console/identity-providers"

/** The settings a form shows: the stored record, or a draft that was just tried (secrets never shown). */
interface Shown {
  readonly oidc: Record<string, unknown>
  readonly ldap: Record<string, unknown>
  readonly revision: string
  readonly oidcSecret: boolean
  readonly ldapSecret: boolean
}

const OIDC_TEXT = [
  ["issuer", "Issuer (https URL)"],
  ["client_id", "Client id"],
  ["name_claim", "Display-name claim"],
  ["groups_claim", "Groups claim (an array of strings)"],
  ["departments_claim", "Departments claim (an array of strings)"],
  ["tenant_claim", "Tenant claim"],
  ["tenant_value", "Tenant value the claim must have"]
] as const

const LDAP_TEXT = [
  ["url", "Directory URL (ldaps://host:port, or ldap://host:port with StartTLS)"],
  ["bind_dn", "Service account bind DN"],
  ["user_search_base", "User search base DN"],
  ["user_search_filter", "User search filter (one {{username}})"],
  ["user_id_attribute", "Stable user id attribute"],
  ["user_name_attribute", "User display-name attribute"],
  ["group_search_base", "Group search base DN"],
  ["group_search_filter", "Group search filter ({{dn}} or {{username}})"],
  ["group_id_attribute", "Stable group id attribute"],
  ["group_name_attribute", "Group display-name attribute"]
] as const

const text = (value: unknown) => (typeof value === "string" ? value : "")

const textField = (
  connection: "oidc" | "ldap",
  values: Record<string, unknown>,
  [name, label]: readonly [string, string]
) =>
  html`<label for="${connection}-${name}">${label}</label>
<input type="text" id="${connection}-${name}" name="${connection}.${name}" value="${text(values[name])}" maxlength="2048">`

const secretField = (connection: "oidc" | "ldap", name: string, label: string, configured: boolean) =>
  html`<label for="${connection}-${name}">${label} (${configured ? "configured; leave empty to keep it" : "not configured"})</label>
<input type="password" id="${connection}-${name}" name="${connection}.${name}" autocomplete="off" maxlength="4096">
<label><input type="checkbox" name="${connection}.clear_${name}" value="on"> Remove the stored ${label.toLowerCase()}</label>`

const settingsForm = (request: ConsoleRequest, shown: Shown): Html => {
  const { oidc, ldap } = shown
  const scopes = Array.isArray(oidc["scopes"]) ? (oidc["scopes"] as ReadonlyArray<string>) : ["openid"]
  // The first submit button is the one Enter presses: saving, never a probe of the other connection.
  return html`<form method="post" action="${PATH}">
${request.csrfField}
<input type="hidden" name="revision" value="${shown.revision}">
<p><button type="submit">Save both connections</button></p>
<fieldset><legend>OIDC connection</legend>
<label><input type="checkbox" name="oidc.enabled" value="on"${oidc["enabled"] === true ? html` checked` : ""}> People sign in through this OIDC provider</label>
${OIDC_TEXT.map((field) => textField("oidc", oidc, field))}
${secretField("oidc", "client_secret", "Client secret", shown.oidcSecret)}
<label for="oidc-method">Client authentication</label>
<select id="oidc-method" name="oidc.token_auth_method">
<option value="client_secret_basic"${oidc["token_auth_method"] === "client_secret_post" ? "" : html` selected`}>client_secret_basic</option>
<option value="client_secret_post"${oidc["token_auth_method"] === "client_secret_post" ? html` selected` : ""}>client_secret_post</option>
</select>
<label for="oidc-scopes">Requested scopes, one per line (must include openid)</label>
<textarea id="oidc-scopes" name="oidc.scopes" rows="2" cols="40">${scopes.join("\n")}</textarea>
<label for="oidc-ca">Private CA certificates (PEM; empty: the system's)</label>
<textarea id="oidc-ca" name="oidc.ca_pem" rows="3" cols="40">${text(oidc["ca_pem"])}</textarea>
<button type="submit" formaction="${PATH}/probe" name="source" value="oidc">Probe the OIDC provider</button>
<button type="submit" formaction="${PATH}/test" name="source" value="oidc">Test an OIDC sign-in</button>
</fieldset>
<fieldset><legend>LDAP connection</legend>
<label><input type="checkbox" name="ldap.enabled" value="on"${ldap["enabled"] === true ? html` checked` : ""}> People sign in with their directory password</label>
${LDAP_TEXT.slice(0, 2).map((field) => textField("ldap", ldap, field))}
${secretField("ldap", "bind_password", "Bind password", shown.ldapSecret)}
${LDAP_TEXT.slice(2).map((field) => textField("ldap", ldap, field))}
<label for="ldap-ca">Private CA certificates (PEM; empty: the system's)</label>
<textarea id="ldap-ca" name="ldap.ca_pem" rows="3" cols="40">${text(ldap["ca_pem"])}</textarea>
<button type="submit" formaction="${PATH}/probe" name="source" value="ldap">Probe the directory</button>
<fieldset><legend>Test a directory sign-in</legend>
<label for="ldap-test-username">Username</label>
<input type="text" id="ldap-test-username" name="username" autocomplete="off" maxlength="256">
<label for="ldap-test-password">Password (used once, never stored or shown)</label>
<input type="password" id="ldap-test-password" name="password" autocomplete="off" maxlength="1024">
<button type="submit" formaction="${PATH}/test" name="source" value="ldap">Test a directory sign-in</button>
</fieldset>
</fieldset>
<button type="submit">Save both connections</button>
</form>`
}

const shownOf = (record: IdentityProvidersRecord): Shown => ({
  oidc: record.oidc,
  ldap: record.ldap,
  revision: record.revision,
  oidcSecret: record.oidc.client_secret_configured,
  ldapSecret: record.ldap.bind_password_configured
})

const page = (request: ConsoleRequest, shown: Shown, result: Html | undefined, updatedAt: string | null) => ({
  _tag: "Page" as const,
  title: "Identity providers",
  body: html`${result ?? ""}
<p class="muted">${updatedAt === null ? "Never saved: both connections are off." : `Last saved ${updatedAt}.`} A save replaces both connections and applies at once; people signed in through a replaced connection are signed out.</p>
${settingsForm(request, shown)}`
})

const refused = (problem: ProviderRefused) =>
  new ConsoleProblem({
    status: problem.status,
    message: problem.message,
    ...(problem.retryAfter === undefined ? {} : { retryAfter: problem.retryAfter })
  })

/** One connection's settings as the API's body has them: empty fields omitted, secrets kept, set or cleared. */
const connectionOf = (form: URLSearchParams, connection: "oidc" | "ldap") => {
  const values: Record<string, unknown> = { enabled: checked(form, `${connection}.enabled`) }
  const names =
    connection === "oidc"
      ? [...OIDC_TEXT.map(([name]) => name), "token_auth_method", "ca_pem"]
      : [...LDAP_TEXT.map(([name]) => name), "ca_pem"]
  for (const name of names) {
    const value = (form.get(`${connection}.${name}`) ?? "").trim()
    if (value !== "") values[name] = value
  }
  if (connection === "oidc") {
    const scopes = lines(form.get("oidc.scopes"))
    if (scopes.length > 0) values["scopes"] = scopes
  }
  const secret = connection === "oidc" ? "client_secret" : "bind_password"
  const typed = form.get(`${connection}.${secret}`) ?? ""
  if (checked(form, `${connection}.clear_${secret}`)) values[secret] = ""
  else if (typed !== "") values[secret] = typed
  return values
}

/** What the form drafted, shown again after a probe or test: never the secrets typed into it. */
const draftShown = (form: URLSearchParams, stored: IdentityProvidersRecord): Shown => {
  const without = (values: Record<string, unknown>, secret: string) => {
    const { [secret]: _, ...rest } = values
    return rest
  }
  return {
    oidc: without(connectionOf(form, "oidc"), "client_secret"),
    ldap: without(connectionOf(form, "ldap"), "bind_password"),
    revision: form.get("revision") ?? stored.revision,
    oidcSecret: stored.oidc.client_secret_configured,
    ldapSecret: stored.ldap.bind_password_configured
  }
}

const settingsPage: ConsoleRoute = {
  method: "GET",
  path: PATH,
  handler: (request) =>
    Effect.gen(function* () {
      const record = yield* (yield* IdentityProviders).record
      return page(request, shownOf(record), undefined, record.updated_at)
    })
}

const settingsSave: ConsoleRoute = {
  method: "POST",
  path: PATH,
  handler: (request) =>
    Effect.gen(function* () {
      const form = yield* checkedForm(request)
      const revision = yield* formRevision(form)
      const body = yield* decodeFields(IdentityProvidersBody, {
        oidc: connectionOf(form, "oidc"),
        ldap: connectionOf(form, "ldap")
      })
      yield* replaceSettings(request.admin.userId, revision, body, yield* requestId).pipe(
        Effect.catchTag("ProviderRefused", (problem) => refused(problem))
      )
      return { _tag: "SeeOther" as const, location: PATH, notice: "Identity-provider settings saved." }
    })
}

/** The draft of the connection a probe or test button names. */
const draftOf = (form: URLSearchParams, withCredentials: boolean) =>
  Effect.gen(function* () {
    const source = form.get("source")
    if (source !== "oidc" && source !== "ldap") {
      return yield* new ConsoleProblem({ status: 400, message: 'source: expected "oidc" or "ldap"' })
    }
    const credentials =
      withCredentials && source === "ldap"
        ? { username: form.get("username") ?? "", password: form.get("password") ?? "" }
        : {}
    return yield* decodeFields(ConnectionDraftBody, { source, [source]: connectionOf(form, source), ...credentials })
  })

const resultBox = (heading: string, body: Html) =>
  html`<section aria-labelledby="result-heading" class="notice" role="status">
<h2 id="result-heading">${heading}</h2>
${body}
</section>`

const probe: ConsoleRoute = {
  method: "POST",
  path: `${PATH}/probe`,
  handler: (request) =>
    Effect.gen(function* () {
      const form = yield* checkedForm(request)
      const draft = yield* draftOf(form, false)
      const result = yield* probeDraft(draft).pipe(Effect.catchTag("ProviderRefused", (problem) => refused(problem)))
      const name = draft.source === "oidc" ? "OIDC provider" : "directory"
      const shown = result.reachable
        ? resultBox(
            `The ${name} answered`,
            "issuer" in result
              ? html`<p>Issuer <code>${result.issuer}</code>; ${result.signing_keys} signing key(s).</p>`
              : html`<p>Connected and bound as the service account.</p>`
          )
        : resultBox(
            `The ${name} could not be reached`,
            html`<p>${result.reason}${result.detail === undefined ? "" : `: ${result.detail}`}</p>`
          )
      const stored = yield* (yield* IdentityProviders).record
      return page(request, draftShown(form, stored), shown, stored.updated_at)
    })
}

const test: ConsoleRoute = {
  method: "POST",
  path: `${PATH}/test`,
  handler: (request) =>
    Effect.gen(function* () {
      const form = yield* checkedForm(request)
      const draft = yield* draftOf(form, true)
      const result = yield* testDraft(request.admin.userId, draft).pipe(
        Effect.catchTag("ProviderRefused", (problem) => refused(problem))
      )
      let shown: Html
      if ("start_url" in result) {
        shown = resultBox(
          "Test an OIDC sign-in",
          html`<p>Open this link once, in this browser, before ${result.expires_at}, and sign in at the provider:</p>
<p><a class="button" href="${result.start_url}">Start the test sign-in</a></p>`
        )
      } else if (result.status === "succeeded") {
        shown = resultBox(
          "The directory signed the person in",
          html`<p>Subject <code>${result.identity.subject}</code>, name ${result.identity.name}; groups: ${
            result.identity.groups.length === 0 ? "none" : result.identity.groups.join(", ")
          }.</p>`
        )
      } else {
        shown = resultBox(
          "The directory refused the sign-in",
          html`<p>${result.reason}${result.detail === undefined ? "" : `: ${result.detail}`}</p>`
        )
      }
      const stored = yield* (yield* IdentityProviders).record
      return page(request, draftShown(form, stored), shown, stored.updated_at)
    })
}

export const identityProviderRoutes: ReadonlyArray<ConsoleRoute> = [settingsPage, settingsSave, probe, test]
