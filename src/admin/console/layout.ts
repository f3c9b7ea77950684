import { consoleDocument, type Html, html } from "../../auth/pages/html.js"
import type { ConsoleNavItem } from "./route.js"

/** What the layout shows around a signed-in page: the navigation, the sign-out form, a notice. */
export interface LayoutFrame {
  readonly nav: ReadonlyArray<ConsoleNavItem>
  /** The request's path, marked `aria-current` in the navigation. */
  readonly path: string
  readonly csrfField: Html
  readonly notice?: string | undefined
}

const navigation = (frame: LayoutFrame) =>
  html`<nav class="console" aria-label="Console"><ul>${frame.nav.map(
    (item) =>
      html`<li><a href="${item.path}"${item.path === frame.path ? html` aria-current="page"` : html``}>${item.label}</a></li>`
  )}</ul></nav>
<form method="post" action="/console/sign-out">${frame.csrfField}<button type="submit">Sign out</button></form>`

/**
 * Every console page (docs/console.md, "Pages"): a skip link, the header landmark with the
 * navigation of every section and the sign-out form (when signed in), then `main` with the page's
 * `<h1>` (its title), the one-time notice of the last form and the page's body. No script. `main`
 * takes the focus (`tabindex="-1"`) so that following the skip link moves the keyboard there, not
 * only the view.
 */
export const consolePage = (title: string, body: Html, status: number, frame?: LayoutFrame, headers = {}) =>
  consoleDocument(
    `${title} — Gateway console`,
    html`<a class="skip" href="#main">Skip to content</a>
<header class="console"><span>Gateway console</span>${frame === undefined ? html`` : navigation(frame)}</header>
<main id="main" tabindex="-1"><h1>${title}</h1>${
      frame?.notice === undefined ? html`` : html`<p class="notice" role="status">${frame.notice}</p>`
    }${body}</main>`,
    status,
    headers
  )

const titles: Record<number, string> = {
  400: "The request is not right",
  401: "Sign in again",
  403: "Refused",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  412: "The record changed",
  413: "Too large",
  415: "Unsupported form",
  500: "Something went wrong",
  503: "Unavailable"
}

/**
 * A refusal as a page with its status. 412 says what to do: the record changed since the form was
 * opened, so nothing was saved; reload to see the current values (`reload`, the form's page).
 */
export const problemPage = (
  status: number,
  message: string,
  options: {
    readonly frame?: LayoutFrame | undefined
    readonly reload?: string | undefined
    readonly headers?: Record<string, string>
  } = {}
) =>
  consolePage(
    titles[status] ?? "Refused",
    html`<p class="error" role="alert">${message}</p>${
      status === 412
        ? html`<p>Someone changed this record after you opened the form, so nothing was saved. Reload it to see the current values, then make your change again.</p>${
            options.reload === undefined ? html`` : html`<p><a href="${options.reload}">Reload the form</a></p>`
          }`
        : html``
    }${options.frame === undefined ? html`<p><a href="/console">Console home</a></p>` : html``}`,
    status,
    options.frame,
    options.headers
  )
