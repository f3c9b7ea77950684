import { randomBytes } from "node:crypto"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { Cookie } from "@effect/platform/Cookies"
import { Effect } from "effect"
import type { AuthSettings } from "./settings.js"

/**
 * Two cookies, both HttpOnly and SameSite=Lax (sent on the top-level GET a client's redirect causes,
 * never on cross-site posts); `__Host-` and Secure on https:
 * - browser: a random id binding login transactions to the browser that started them;
 * - session: the token of the person's sign-in (browser_sessions), for 8 hours at most.
 */
const names = (settings: AuthSettings) =>
  settings.secureCookies
    ? { browser: "__Host-gw_browser", session: "__Host-gw_session" }
    : { browser: "gw_browser", session: "gw_session" }

const options = (settings: AuthSettings, maxAgeSeconds?: number): Cookie["options"] => ({
  httpOnly: true,
  secure: settings.secureCookies,
  sameSite: "lax",
  path: "/",
  ...(maxAgeSeconds === undefined ? {} : { maxAge: `${maxAgeSeconds} seconds` })
})

const TOKEN = /^[A-Za-z0-9_-]{43}$/

export const newCookieToken = (): string => randomBytes(32).toString("base64url")

/** The cookie's value when well-formed (32 random bytes, base64url); anything else counts as absent. */
const read = (cookies: Readonly<Record<string, string>>, name: string): string | undefined => {
  const value = cookies[name]
  return value !== undefined && TOKEN.test(value) ? value : undefined
}

export const readBrowserCookie = (settings: AuthSettings, cookies: Readonly<Record<string, string>>) =>
  read(cookies, names(settings).browser)

export const readSessionCookie = (settings: AuthSettings, cookies: Readonly<Record<string, string>>) =>
  read(cookies, names(settings).session)

export const setBrowserCookie =
  (settings: AuthSettings, value: string) => (response: HttpServerResponse.HttpServerResponse) =>
    HttpServerResponse.setCookie(response, names(settings).browser, value, options(settings)).pipe(Effect.orDie)

export const setSessionCookie =
  (settings: AuthSettings, value: string, maxAgeSeconds: number) => (response: HttpServerResponse.HttpServerResponse) =>
    HttpServerResponse.setCookie(response, names(settings).session, value, options(settings, maxAgeSeconds)).pipe(
      Effect.orDie
    )

/** This browser's binding cookie, or a new one to set (`isNew`) on its first visit. */
export const browserBinding = (settings: AuthSettings) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const existing = readBrowserCookie(settings, request.cookies)
    return existing === undefined ? { value: newCookieToken(), isNew: true } : { value: existing, isNew: false }
  })
