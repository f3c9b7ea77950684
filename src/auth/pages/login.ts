import { renderSVG } from "uqr"
import { Html, html, page } from "./html.js"

export interface FormContext {
  /** The login transaction id and its anti-CSRF token, carried by every form. */
  readonly login: string
  readonly csrf: string
  /** The application asking, or undefined for a sign-in to the grants portal. */
  readonly clientId: string | undefined
  /** Where the flow may redirect after a form posts (the client's redirect origin), for the CSP. */
  readonly formTargets: ReadonlyArray<string>
}

export const hiddenFields = (form: FormContext) =>
  html`<input type="hidden" name="login" value="${form.login}"><input type="hidden" name="csrf" value="${form.csrf}">`

const errorBox = (error: string | undefined) =>
  error === undefined ? new Html("") : html`<p class="error" role="alert">${error}</p>`

const purpose = (form: FormContext) =>
  form.clientId === undefined
    ? html`<p class="muted">Sign in to manage the applications you allowed.</p>`
    : html`<p class="muted">The application <strong>${form.clientId}</strong> asks you to sign in.</p>`

/** The enterprise identity provider's entry: a link carrying the transaction and its anti-CSRF token. */
const upstreamEntry = (form: FormContext, host: string | undefined) =>
  host === undefined
    ? new Html("")
    : html`<section aria-label="Your organization"><h2>Your organization</h2>
<p><a class="button" id="upstream-sign-in" href="/sso/login/upstream?login=${encodeURIComponent(form.login)}&amp;csrf=${encodeURIComponent(form.csrf)}">Sign in with ${host}</a></p></section>`

/**
 * The directory account form (an enabled LDAP connection, docs/ldap.md): name and password, checked by
 * the directory; a single factor, with no second step.
 */
const ldapEntry = (form: FormContext, enabled: boolean) =>
  enabled
    ? html`<section aria-label="Directory account"><h2>Directory account</h2>
<p class="muted">Sign in with your directory account.</p>
<form method="post" action="/sso/login/ldap">${hiddenFields(form)}
<label for="ldap-username">User name</label><input type="text" id="ldap-username" name="username" autocomplete="username" required maxlength="256">
<label for="ldap-password">Password</label><input type="password" id="ldap-password" name="password" autocomplete="current-password" required maxlength="1024">
<button type="submit">Sign in</button></form></section>`
    : new Html("")

/** Which sign-in methods the page offers besides local accounts. */
export interface SignInMethods {
  /** The enterprise identity provider's host, for its link; undefined without one. */
  readonly upstreamHost: string | undefined
  /** An enabled LDAP connection: the directory account form. */
  readonly ldapEnabled: boolean
}

/**
 * `GET /sso`: the sign-in methods configured: the enterprise identity provider (`auth.sso.upstream` or
 * a stored OIDC connection), the directory account (a stored LDAP connection), then local accounts.
 */
export const signInPage = (form: FormContext, methods: SignInMethods, error?: string, status = 200) =>
  page(
    "Sign in",
    html`<h1>Sign in to the gateway</h1>${purpose(form)}${errorBox(error)}${upstreamEntry(form, methods.upstreamHost)}${ldapEntry(form, methods.ldapEnabled)}
<section aria-label="Local account"><h2>Local account</h2>
<form method="post" action="/sso/login/local">${hiddenFields(form)}
<label for="username">User name</label><input type="text" id="username" name="username" autocomplete="username" required maxlength="256" autofocus>
<label for="password">Password</label><input type="password" id="password" name="password" autocomplete="current-password" required maxlength="1024">
<button type="submit">Continue</button></form></section>`,
    { status, formTargets: form.formTargets }
  )

export const mfaPage = (form: FormContext, error?: string, status = 200) =>
  page(
    "Verification code",
    html`<h1>Verification code</h1>${errorBox(error)}<p>Enter the 6-digit code from your authenticator app.</p>
<form method="post" action="/sso/mfa">${hiddenFields(form)}
<label for="code">Code</label><input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required autofocus>
<button type="submit">Verify</button></form>`,
    { status, formTargets: form.formTargets }
  )

export interface Enrollment {
  readonly secretBase32: string
  readonly otpauthUri: string
}

export const enrollPage = (form: FormContext, enrollment: Enrollment, error?: string, status = 200) =>
  page(
    "Set up two-step verification",
    html`<h1>Set up two-step verification</h1>${errorBox(error)}
<p>Add this account to an authenticator app (TOTP: SHA-1, 6 digits, 30 seconds), then enter the code it shows.</p>
<figure class="qr" id="totp-qr">${new Html(renderSVG(enrollment.otpauthUri, { border: 2 }))}<figcaption class="muted">Scan this with the app, or type the secret key below.</figcaption></figure>
<p>Secret key:<br><code class="secret" id="totp-secret">${enrollment.secretBase32}</code></p>
<p class="muted">Or import this address: <code id="totp-uri">${enrollment.otpauthUri}</code></p>
<form method="post" action="/sso/mfa/enroll">${hiddenFields(form)}
<label for="code">Code</label><input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required autofocus>
<button type="submit">Confirm</button></form>`,
    { status, formTargets: form.formTargets }
  )

export const consentPage = (
  form: FormContext & { readonly clientId: string },
  scope: ReadonlyArray<string>,
  resource: string
) =>
  page(
    "Allow access",
    html`<h1>Allow <strong>${form.clientId}</strong> to act for you?</h1>
<p>It will reach <code>${resource}</code> with your permissions${scope.length === 0 ? "" : " and these scopes:"}</p>
${scope.length === 0 ? new Html("") : html`<ul>${scope.map((item) => html`<li><code>${item}</code></li>`)}</ul>`}
<p class="muted">You can withdraw this later under &ldquo;Applications you allowed&rdquo; at /sso/grants.</p>
<form method="post" action="/sso/consent">${hiddenFields(form)}
<button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny">Deny</button></form>`,
    { formTargets: form.formTargets }
  )
