import { createHash } from "node:crypto"
import { HttpServerResponse } from "@effect/platform"

/** Markup that is already safe to emit. Anything else interpolated into `html` is escaped. */
export class Html {
  constructor(readonly text: string) {}
}

type Part = Html | string | number | undefined | ReadonlyArray<Html>

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char)

const render = (part: Part): string => {
  if (part === undefined) return ""
  if (part instanceof Html) return part.text
  if (Array.isArray(part)) return part.map((item: Html) => item.text).join("")
  return escapeHtml(String(part))
}

/** Tagged template for server-rendered pages: every interpolated value is escaped unless it is `Html`. */
export const html = (strings: TemplateStringsArray, ...parts: ReadonlyArray<Part>): Html =>
  new Html(strings.reduce((out, text, index) => out + text + (index < parts.length ? render(parts[index]) : ""), ""))

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:26rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem}
input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}
button{margin-top:1rem;padding:.5rem 1rem;font-size:1rem;cursor:pointer}
.error{background:#fdecea;color:#8a1c12;padding:.6rem;border-radius:4px}
code,.secret{font-family:ui-monospace,monospace;word-break:break-all}.muted{color:#5b6270;font-size:.9rem}
table{width:100%;border-collapse:collapse}td{padding:.3rem 0;vertical-align:top}
.qr{margin:1rem 0}.qr svg{display:block;width:12rem;height:12rem}
a.button{display:inline-block;padding:.5rem 1rem;background:#1d4ed8;color:#fff;border-radius:4px;text-decoration:none}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f5f7;padding:.6rem;border-radius:4px}
pre[dir=ltr],code.exact{unicode-bidi:bidi-override}code.exact{white-space:pre-wrap}
form.inline{display:inline-block;margin-right:.6rem}.notice{background:#e8f5e9;padding:.6rem;border-radius:4px}`

/**
 * The console's additions to the same stylesheet (src/admin/console/layout.ts): a wider main beside a
 * header and navigation, tables of records, status badges, the skip link.
 */
const CONSOLE_STYLE = `${STYLE}
body.console main{max-width:64rem;margin:1.5rem auto}body.console h1{font-size:1.6rem}body.console h2{font-size:1.2rem}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.4rem;z-index:1}
body.console main:focus{outline:none}
header.console{background:#1d2330;color:#fff;padding:.6rem 1.5rem;display:flex;gap:1.5rem;align-items:center;flex-wrap:wrap}
header.console a{color:#fff}header.console form{margin-left:auto}header.console button{margin:0;padding:.3rem .8rem}
nav.console ul{list-style:none;margin:0;padding:0;display:flex;gap:1rem;flex-wrap:wrap}
nav.console a[aria-current=page]{font-weight:bold;text-decoration:none}
main table{margin:.6rem 0}main th{text-align:left;padding:.3rem .6rem .3rem 0;border-bottom:1px solid #c9ced6}
main td{padding:.3rem .6rem .3rem 0;border-bottom:1px solid #e4e7eb}
.state-ok{color:#1b5e20}.state-bad{color:#8a1c12}
select,textarea{font-size:1rem;padding:.4rem}textarea{width:100%;box-sizing:border-box}`

// The stylesheets are inline and allowed by their hashes: no script and no other style can run (CSP).
const hashOf = (stylesheet: string) => `'sha256-${createHash("sha256").update(stylesheet).digest("base64")}'`
const STYLE_HASH = hashOf(STYLE)
const CONSOLE_STYLE_HASH = hashOf(CONSOLE_STYLE)

/**
 * The CSP of every page: nothing loads or runs but the inline stylesheet; forms post only to the
 * gateway and, after sign-in, the browser may follow the redirect to the client (`formTargets`:
 * Chromium applies `form-action` to redirects that follow a form submission).
 */
export const contentSecurityPolicy = (formTargets: ReadonlyArray<string> = [], styleHash = STYLE_HASH): string =>
  [
    "default-src 'none'",
    `style-src ${styleHash}`,
    `form-action 'self'${formTargets.map((target) => ` ${target}`).join("")}`,
    "frame-ancestors 'none'",
    "base-uri 'none'"
  ].join("; ")

/** Headers every /sso browser response carries: never cached, never framed, never leaking its URL to another origin. */
export const browserHeaders = (
  formTargets: ReadonlyArray<string> = [],
  styleHash = STYLE_HASH
): Record<string, string> => ({
  "cache-control": "no-store",
  pragma: "no-cache",
  "content-security-policy": contentSecurityPolicy(formTargets, styleHash),
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin"
})

export interface PageOptions {
  readonly status?: number
  readonly formTargets?: ReadonlyArray<string>
  /**
   * `strict-origin` for a page whose own address holds a secret (the enrolment link's token): its
   * form's post and its links then send the origin alone as `Referer`, never the path and query. Not
   * `no-referrer`: under it Chromium sends `Origin: null` with a form's post, which the same-origin
   * check of every /sso form refuses. The meta tag says it too — a meta tag overrides the header, so
   * both must agree.
   */
  readonly referrer?: "same-origin" | "strict-origin"
}

export const page = (title: string, body: Html, options: PageOptions = {}): HttpServerResponse.HttpServerResponse => {
  const referrer = options.referrer ?? "same-origin"
  return HttpServerResponse.text(
    html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="${referrer}"><title>${title}</title><style>${new Html(STYLE)}</style></head>
<body><main>${body}</main></body></html>`.text,
    {
      status: options.status ?? 200,
      contentType: "text/html; charset=utf-8",
      headers: { ...browserHeaders(options.formTargets), "referrer-policy": referrer }
    }
  )
}

/** A 303 to another page or to the client, with the same no-store, no-referrer headers. */
export const seeOther = (location: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.empty({ status: 303, headers: { ...browserHeaders(), location } })

/**
 * A console page (src/admin/console/layout.ts): the same document, headers and CSP as the /sso pages,
 * with the console's stylesheet and its own landmarks in `body` (header, nav, main).
 */
export const consoleDocument = (
  title: string,
  body: Html,
  status: number,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(
    html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="same-origin"><title>${title}</title><style>${new Html(CONSOLE_STYLE)}</style></head>
<body class="console">${body}</body></html>`.text,
    {
      status,
      contentType: "text/html; charset=utf-8",
      headers: { ...browserHeaders([], CONSOLE_STYLE_HASH), ...headers }
    }
  )
