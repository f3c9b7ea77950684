import { totpAt } from "../../src/identity/local/totp.js"
import {
  Browser,
  beginCodeFlow,
  callbackParams,
  enrollmentSecret,
  exchange,
  formFields,
  signIn
} from "./oauth-client.js"

export interface EnrolmentAttempt {
  /** The page the form was on (GET), and the answer to the post. */
  readonly formStatus: number
  readonly status: number
  readonly text: string
  /** The TOTP secret the page offered (to compute later sign-in codes). */
  readonly secret: Uint8Array | undefined
}

/**
 * A person opens an enrolment link (docs/local-accounts.md) in a fresh browser and posts its form: the
 * password twice (`again`, default the same) and the current code of the offered secret at `nowMs`
 * (`code` overrides it).
 */
export const enrolThroughLink = async (
  link: string,
  password: string,
  nowMs: number,
  options: { readonly again?: string; readonly code?: string; readonly browser?: Browser } = {}
): Promise<EnrolmentAttempt> => {
  const url = new URL(link)
  const browser = options.browser ?? new Browser(url.origin)
  const page = await browser.get(`${url.pathname}${url.search}`)
  const html = await page.text()
  if (page.status !== 200) return { formStatus: page.status, status: page.status, text: html, secret: undefined }
  const secret = enrollmentSecret(html)
  const answer = await browser.post(
    "/sso/enrol",
    {
      ...formFields(html, "/sso/enrol"),
      password,
      password_again: options.again ?? password,
      code: options.code ?? totpAt(secret, nowMs)
    },
    { origin: url.origin }
  )
  return { formStatus: page.status, status: answer.status, text: await answer.text(), secret }
}

/**
 * `username` signs in through /sso in a fresh browser (password, then the code of `secret` at `nowMs`)
 * for the `cli` client and `/mcp`; the token endpoint's answer (or the page where the sign-in stopped).
 */
export const signInLocal = async (
  gateway: { readonly baseUrl: string; readonly mcpUrl: string },
  username: string,
  password: string,
  secret: Uint8Array,
  nowMs: number
): Promise<{ readonly status: number; readonly body: Record<string, unknown>; readonly page?: string }> => {
  const browser = new Browser(gateway.baseUrl)
  const redirectUri = "http://127.0.0.1:50003/callback"
  const { response, verifier } = await beginCodeFlow(browser, redirectUri, {
    client_id: "cli",
    resource: gateway.mcpUrl,
    scope: "offline_access",
    state: "s"
  })
  const done = await signIn(browser, await browser.follow(response), { username, password, totp: { secret }, nowMs })
  if (done.status !== 302 && done.status !== 303) return { status: done.status, body: {}, page: await done.text() }
  const code = callbackParams(done).get("code") ?? ""
  const exchanged = await exchange(gateway.baseUrl, {
    code,
    verifier,
    redirectUri,
    clientId: "cli",
    callback: new URLSearchParams()
  })
  return { status: exchanged.response.status, body: exchanged.body }
}
