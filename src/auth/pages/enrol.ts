import { renderSVG } from "uqr"
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../../identity/local/password.js"
import { Html, html, page } from "./html.js"
import type { Enrollment } from "./login.js"

/** What the enrolment form carries besides what the person types: the link's token, the offered secret, the CSRF token. */
export interface EnrolmentForm {
  readonly token: string
  readonly sealedSecret: string
  readonly csrf: string
  readonly username: string
}

const errorBox = (error: string | undefined) =>
  error === undefined ? new Html("") : html`<p class="error" role="alert">${error}</p>`

/**
 * `GET /sso/enrol?token=…` (docs/local-accounts.md): the person sets a password (typed twice) and adds
 * the offered TOTP secret to an authenticator app, confirming it with a code. The token travels in a
 * hidden field, never in the form's address.
 */
export const enrolmentPage = (form: EnrolmentForm, enrollment: Enrollment, error?: string, status = 200) =>
  page(
    "Set up your account",
    html`<h1>Set up your account</h1>${errorBox(error)}
<p>Your user name is <strong id="enrol-username">${form.username}</strong>. Choose a password and set up two-step verification.</p>
<form method="post" action="/sso/enrol">
<input type="hidden" name="token" value="${form.token}"><input type="hidden" name="secret" value="${form.sealedSecret}"><input type="hidden" name="csrf" value="${form.csrf}">
<input type="text" name="username" value="${form.username}" autocomplete="username" hidden>
<label for="password">Password (at least ${String(MIN_PASSWORD_LENGTH)} characters)</label><input type="password" id="password" name="password" autocomplete="new-password" required minlength="${String(MIN_PASSWORD_LENGTH)}" maxlength="${String(MAX_PASSWORD_LENGTH)}">
<label for="password-again">Password again</label><input type="password" id="password-again" name="password_again" autocomplete="new-password" required maxlength="${String(MAX_PASSWORD_LENGTH)}">
<p>Add this account to an authenticator app (TOTP: SHA-1, 6 digits, 30 seconds), then enter the code it shows.</p>
<figure class="qr" id="totp-qr">${new Html(renderSVG(enrollment.otpauthUri, { border: 2 }))}<figcaption class="muted">Scan this with the app, or type the secret key below.</figcaption></figure>
<p>Secret key:<br><code class="secret" id="totp-secret">${enrollment.secretBase32}</code></p>
<p class="muted">Or import this address: <code id="totp-uri">${enrollment.otpauthUri}</code></p>
<label for="code">Code</label><input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">Set up account</button></form>`,
    { status, referrer: "strict-origin" }
  )

/** After the enrolment: the account is ready; sign-in happens from an application, as for anyone. */
export const enrolledPage = (username: string) =>
  page(
    "Account ready",
    html`<h1>Your account is ready</h1><p>Sign in as <strong>${username}</strong> with your password and a code from your authenticator app.</p>
<p>Tools appear once an administrator gives you access.</p><p><a href="/sso/grants">Go to your applications</a></p>`,
    { referrer: "strict-origin" }
  )
