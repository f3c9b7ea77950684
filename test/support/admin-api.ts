import { Clock, Effect, Redacted } from "effect"
import { hashPassword } from "../../src/identity/local/password.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { UserRepo } from "../../src/store/users.js"
import { Browser, beginCodeFlow, callbackParams, exchange, obtainCode, signIn } from "./oauth-client.js"
import { inGateway, type OAuthGateway } from "./oauth-gateway.js"

export interface ApiAnswer {
  readonly status: number
  readonly headers: Headers
  readonly body: Record<string, unknown>
}

/**
 * A Management API token obtained the real way: the administrator signs in through /sso with the
 * loopback client `admin-cli`, asking for the admin resource and `gateway:admin`. `totp` carries the
 * administrator's second factor between sign-ins.
 */
export const adminToken = (gateway: OAuthGateway, totp: { secret?: Uint8Array } = {}, nowMs = 0) =>
  Effect.promise(async () => {
    const obtained = await obtainCode(new Browser(gateway.baseUrl), {
      clientId: "admin-cli",
      redirectUri: "http://127.0.0.1:50001/callback",
      scope: "gateway:admin",
      resource: gateway.adminUrl,
      totp,
      nowMs
    })
    const { body } = await exchange(gateway.baseUrl, obtained)
    if (typeof body["access_token"] !== "string") throw new Error(`no admin token: ${JSON.stringify(body)}`)
    return body["access_token"]
  })

/** Requests to the Management API of `gateway` with `token` (none: unauthenticated). */
export const managementApi = (gateway: OAuthGateway, token?: string) => {
  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    Effect.promise(async (): Promise<ApiAnswer> => {
      const response = await fetch(`${gateway.adminUrl}${path}`, {
        method,
        headers: {
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers
        },
        ...(body === undefined
          ? {}
          : { body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body) })
      })
      const text = await response.text()
      return { status: response.status, headers: response.headers, body: text === "" ? {} : JSON.parse(text) }
    })
  return {
    get: (path: string, headers?: Record<string, string>) => send("GET", path, undefined, headers),
    post: (path: string, body: unknown, headers?: Record<string, string>) => send("POST", path, body, headers),
    put: (path: string, body: unknown, headers?: Record<string, string>) => send("PUT", path, body, headers),
    send
  }
}

/** `If-Match` for a record's revision. */
export const ifMatch = (record: { readonly revision?: unknown } | Record<string, unknown>) => ({
  "if-match": `"${String((record as { revision?: unknown }).revision)}"`
})

/** A local account `username` with `password` (no groups yet); its user id. */
export const addLocalUser = (gateway: OAuthGateway, username: string, password: string) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const at = new Date(yield* Clock.currentTimeMillis)
      const id = yield* (yield* UserRepo).insertLocal({ kind: "local", username, displayName: username, at })
      yield* (yield* LocalCredentialRepo).setPassword(id, yield* hashPassword(Redacted.make(password)), at)
      return id
    })
  )

/**
 * `username` signs in (a fresh browser; TOTP enrolled on the first sign-in, kept in `totp`) asking for
 * a Management API token; the token response body (its `scope` says what was granted).
 */
export const signInForAdminToken = (
  gateway: OAuthGateway,
  username: string,
  password: string,
  totp: { secret?: Uint8Array } = {},
  nowMs = 0,
  scope = "gateway:admin"
) =>
  Effect.promise(async () => {
    const browser = new Browser(gateway.baseUrl)
    const redirectUri = "http://127.0.0.1:50002/callback"
    const { response, verifier } = await beginCodeFlow(browser, redirectUri, {
      client_id: "admin-cli",
      scope,
      resource: gateway.adminUrl,
      state: "s"
    })
    const done = await signIn(browser, await browser.follow(response), { username, password, totp, nowMs })
    const code = callbackParams(done).get("code") ?? ""
    const obtained = { code, verifier, redirectUri, clientId: "admin-cli", callback: new URLSearchParams() }
    return (await exchange(gateway.baseUrl, obtained)).body
  })
