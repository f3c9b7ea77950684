import { createHash, randomBytes } from "node:crypto"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { ADMIN_PASSWORD } from "./oauth-gateway.js"

/**
 * A scripted browser for the /sso pages over real HTTP: a cookie jar, redirects followed by hand (so
 * tests see every hop), and form fields read from the served HTML.
 */
export class Browser {
  readonly cookies = new Map<string, string>()
  constructor(readonly origin: string) {}

  private absorb(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";")
      const index = pair.indexOf("=")
      const name = pair.slice(0, index).trim()
      const value = pair.slice(index + 1).trim()
      if (/max-age=0/i.test(line) || value === "") this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return response
  }

  private headers(extra: Record<string, string> = {}) {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
    return { ...(cookie === "" ? {} : { cookie }), ...extra }
  }

  url(path: string) {
    return new URL(path, this.origin).toString()
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.absorb(await fetch(this.url(path), { redirect: "manual", headers: this.headers(headers) }))
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.absorb(
      await fetch(this.url(path), {
        method: "POST",
        redirect: "manual",
        headers: this.headers({ "content-type": "application/x-www-form-urlencoded", ...headers }),
        body: new URLSearchParams(fields).toString()
      })
    )
  }

  /** Follows redirects within the gateway; stops at a page or at a redirect that leaves it (the client's). */
  async follow(response: Response): Promise<Response> {
    let current = response
    for (let hops = 0; hops < 10; hops++) {
      const location = current.headers.get("location")
      if (current.status < 300 || current.status >= 400 || location === null) return current
      const next = new URL(location, this.origin)
      if (next.origin !== this.origin) return current
      current = await this.get(next.toString())
    }
    throw new Error("too many redirects")
  }
}

/** Hidden and named inputs of the first form posting to `action` in `html`. */
export const formFields = (html: string, action: string): Record<string, string> => {
  const start = html.indexOf(`action="${action}"`)
  if (start < 0) throw new Error(`no form posting to ${action} in:\n${html}`)
  const form = html.slice(start, html.indexOf("</form>", start))
  const fields: Record<string, string> = {}
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] ?? ""] = (match[2] ?? "").replaceAll("&amp;", "&").replaceAll("&quot;", '"')
  }
  return fields
}

export const pkcePair = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

export interface AuthorizeParams {
  readonly client_id?: string
  readonly redirect_uri?: string
  readonly response_type?: string
  readonly code_challenge?: string
  readonly code_challenge_method?: string
  readonly scope?: string
  readonly state?: string
  readonly resource?: string
  readonly prompt?: string
}

export const authorizePath = (params: AuthorizeParams | URLSearchParams) =>
  `/sso/authorize?${(params instanceof URLSearchParams ? params : new URLSearchParams(params as Record<string, string>)).toString()}`

/** The TOTP secret shown on the enrollment page. */
export const enrollmentSecret = (html: string): Uint8Array => {
  const match = /id="totp-secret">([A-Z2-7]+)</.exec(html)
  const secret = match?.[1] === undefined ? undefined : base32Decode(match[1])
  if (secret === undefined) throw new Error(`no TOTP secret on the page:\n${html}`)
  return secret
}

export interface SignInOptions {
  readonly username?: string
  readonly password?: string
  /** The administrator's TOTP secret once enrolled; enrollment happens (and sets it) when absent. */
  readonly totp: { secret?: Uint8Array }
  /** The time to compute TOTP codes at (the gateway's clock: TestClock under `it.effect`). */
  readonly nowMs: number
}

/**
 * From the sign-in page to the end of sign-in: password, then TOTP (enrolling on first sign-in). The
 * last response: the redirect back to the client (or to the portal), or a page if something failed.
 */
export const signIn = async (browser: Browser, page: Response, options: SignInOptions): Promise<Response> => {
  const html = await page.text()
  const afterPassword = await browser.follow(
    await browser.post("/sso/login/local", {
      ...formFields(html, "/sso/login/local"),
      username: options.username ?? "admin",
      password: options.password ?? ADMIN_PASSWORD
    })
  )
  if (afterPassword.status !== 200) return afterPassword
  const step = await afterPassword.text()
  if (step.includes('action="/sso/mfa/enroll"')) {
    const secret = enrollmentSecret(step)
    options.totp.secret = secret
    return browser.follow(
      await browser.post("/sso/mfa/enroll", {
        ...formFields(step, "/sso/mfa/enroll"),
        code: totpAt(secret, options.nowMs)
      })
    )
  }
  const secret = options.totp.secret
  if (secret === undefined) throw new Error("the account has a second factor but the test has no secret")
  return browser.follow(
    await browser.post("/sso/mfa", { ...formFields(step, "/sso/mfa"), code: totpAt(secret, options.nowMs) })
  )
}

/** The query of a redirect to the client, as a plain object (repeated names would be lost: check `all`). */
export const callbackParams = (response: Response) => {
  const location = response.headers.get("location")
  if (location === null) throw new Error(`expected a redirect, got ${response.status}`)
  return new URL(location).searchParams
}

export const tokenRequest = (origin: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${origin}/sso/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString()
  })

export interface ObtainedCode {
  readonly code: string
  readonly verifier: string
  readonly redirectUri: string
  readonly clientId: string
  readonly callback: URLSearchParams
}

/**
 * Authorization request → sign-in (when this browser is not signed in yet) → code at the client's
 * redirect URI. `totp` carries the administrator's TOTP secret between calls.
 */
export const obtainCode = async (
  browser: Browser,
  options: {
    readonly clientId?: string
    readonly redirectUri?: string
    readonly scope?: string
    readonly resource?: string
    readonly state?: string
    readonly totp: { secret?: Uint8Array }
    readonly nowMs: number
  }
): Promise<ObtainedCode> => {
  const clientId = options.clientId ?? "cli"
  const redirectUri = options.redirectUri ?? "http://127.0.0.1:50000/callback"
  const { response: start, verifier } = await beginCodeFlow(browser, redirectUri, {
    client_id: clientId,
    state: options.state ?? "s",
    ...(options.scope === undefined ? {} : { scope: options.scope }),
    ...(options.resource === undefined ? {} : { resource: options.resource })
  })
  let last = await browser.follow(start)
  if (last.status === 200) last = await signIn(browser, last, { totp: options.totp, nowMs: options.nowMs })
  const callback = callbackParams(last)
  const code = callback.get("code")
  if (code === null) throw new Error(`no code in ${last.headers.get("location")}`)
  return { code, verifier, redirectUri, clientId, callback }
}

/** Exchanges an obtained code; the parsed JSON body and the response. */
export const exchange = async (origin: string, obtained: ObtainedCode, overrides: Record<string, string> = {}) => {
  const response = await tokenRequest(origin, {
    grant_type: "authorization_code",
    client_id: obtained.clientId,
    code: obtained.code,
    redirect_uri: obtained.redirectUri,
    code_verifier: obtained.verifier,
    ...overrides
  })
  return { response, body: (await response.json()) as Record<string, unknown> }
}

export const refresh = async (origin: string, refreshToken: string, overrides: Record<string, string> = {}) => {
  const response = await tokenRequest(origin, {
    grant_type: "refresh_token",
    client_id: "cli",
    refresh_token: refreshToken,
    ...overrides
  })
  return { response, body: (await response.json()) as Record<string, unknown> }
}

/**
 * Starts an authorization-code request for the test client `cli` with a fresh S256 challenge and the
 * `extra` query parameters; the verifier is for the token exchange.
 */
export const beginCodeFlow = async (
  browser: Browser,
  redirectUri: string,
  extra: Record<string, string> = {},
  headers: Record<string, string> = {}
): Promise<{ readonly response: Response; readonly verifier: string }> => {
  const { path, verifier } = codeFlowPath(redirectUri, extra)
  return { response: await browser.get(path, headers), verifier }
}

/** The authorization request path of a code flow for `cli` (or `extra.client_id`) with a fresh S256 challenge. */
export const codeFlowPath = (redirectUri: string, extra: Record<string, string> = {}) => {
  const { verifier, challenge } = pkcePair()
  const path = authorizePath({
    client_id: "cli",
    redirect_uri: redirectUri,
    response_type: "code",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...extra
  })
  return { path, verifier }
}

/**
 * Starts an authorization request for the test client `cli` (loopback redirect, fresh S256 challenge,
 * state `s`), with `extra` query parameters and request `headers` (e.g. X-Forwarded-For).
 */
export const startAuthorization = (
  browser: Browser,
  extra: Record<string, string> = {},
  headers: Record<string, string> = {}
): Promise<Response> =>
  beginCodeFlow(browser, "http://127.0.0.1:40000/callback", { state: "s", ...extra }, headers).then(
    (started) => started.response
  )

/**
 * A 2025-era `initialize` on `/mcp` with a gateway-issued access token: the cheapest request that proves
 * a token is accepted (its status), given up after 10 s so a stalled gateway fails the test, not hangs it.
 */
export const mcpInitialize = (origin: string, token: string) =>
  fetch(`${origin}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25"
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "gateway-test", version: "1" } }
    }),
    signal: AbortSignal.timeout(10_000)
  })
