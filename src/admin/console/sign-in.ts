import { createHash } from "node:crypto"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect } from "effect"
import { OAuthParams } from "../../auth/authorize/params.js"
import { clientAddress } from "../../auth/client-address.js"
import { html } from "../../auth/pages/html.js"
import { OFFLINE_ACCESS } from "../../auth/scopes.js"
import { authSettings } from "../../auth/settings.js"
import { exchangeCode } from "../../auth/token/authorization-code.js"
import { refreshTokens } from "../../auth/token/refresh.js"
import type { GatewayConfig } from "../../config/schema.js"
import { constantTimeEqual } from "../../crypto/hashing.js"
import { securityEvent } from "../../events/security-log.js"
import type { AdminRefusal } from "../auth.js"
import type { AdminCaller } from "../middleware.js"
import { adminResource, consoleRedirectUri } from "../resource.js"
import { consolePage, problemPage } from "./layout.js"
import { type ConsoleSession, ConsoleSessions, SIGN_IN_TTL_MS } from "./sessions.js"

/** What the console signs in with (docs/console.md, "Signing in"). */
export interface ConsoleSettings {
  readonly adminOrigin: string
  readonly issuer: string
  readonly clientId: string
  readonly redirectUri: string
  readonly scope: ReadonlyArray<string>
}

/** The console is on when `admin.client_id` is set and the gateway is its own authorization server. */
export const consoleSettingsOf = (config: GatewayConfig): ConsoleSettings | undefined =>
  config.admin.client_id === undefined || config.auth.mode !== "builtin"
    ? undefined
    : {
        adminOrigin: adminResource(config),
        issuer: config.auth.issuer,
        clientId: config.admin.client_id,
        redirectUri: consoleRedirectUri(config),
        // offline_access: the session's access token (10 minutes) is renewed in-process while it lasts.
        scope: [...config.admin.required_scopes, OFFLINE_ACCESS]
      }

export type AdminCheck = (
  /** An `Authorization` header's value: `Bearer <access token>`. */
  authorization: string | undefined
) => Effect.Effect<typeof AdminCaller.Service, AdminRefusal, HttpServerRequest.HttpServerRequest>

/**
 * The cookies (docs/console.md, "Sessions"): HttpOnly and Secure always (Chromium and Firefox keep
 * Secure cookies of http://127.0.0.1 and http://localhost, so local mode works too). The session's is
 * SameSite=Strict on Path=/console; the sign-in's is SameSite=Lax — it must come back on the top-level
 * redirect from the authorization server, which may be another site — on the callback's path only.
 */
export const SESSION_COOKIE = "gateway_console"
const SIGN_IN_COOKIE = "gateway_console_sign_in"
const CALLBACK_PATH = "/console/callback"

const setSessionCookie = (response: HttpServerResponse.HttpServerResponse, value: string, maxAgeSeconds?: number) =>
  HttpServerResponse.setCookie(response, SESSION_COOKIE, value, {
    httpOnly: true,
    secure: true,
    sameSite: "strict",
    path: "/console",
    ...(maxAgeSeconds === undefined ? {} : { maxAge: `${maxAgeSeconds} seconds` })
  }).pipe(Effect.orDie)

const setSignInCookie = (response: HttpServerResponse.HttpServerResponse, value: string, maxAgeSeconds: number) =>
  HttpServerResponse.setCookie(response, SIGN_IN_COOKIE, value, {
    httpOnly: true,
    secure: true,
    sameSite: "lax",
    path: CALLBACK_PATH,
    maxAge: `${maxAgeSeconds} seconds`
  }).pipe(Effect.orDie)

/** Removes the session cookie (sign-out, or a session that ended). */
export const clearSessionCookie = (response: HttpServerResponse.HttpServerResponse) => setSessionCookie(response, "", 0)

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

/**
 * A browser without a console session: a sign-in starts (authorization code, PKCE S256, state) at the
 * gateway's own authorization server, for the admin resource and `admin.required_scopes`, with
 * `prompt=login`. `returnTo` is the console page asked for, opened after the callback.
 */
export const startSignIn = (settings: ConsoleSettings, returnTo: string) =>
  Effect.gen(function* () {
    const { cookie, pending } = yield* (yield* ConsoleSessions).startSignIn(returnTo)
    const query = new URLSearchParams({
      response_type: "code",
      client_id: settings.clientId,
      redirect_uri: settings.redirectUri,
      code_challenge: s256(pending.verifier),
      code_challenge_method: "S256",
      state: pending.state,
      scope: settings.scope.join(" "),
      resource: settings.adminOrigin,
      // Password and second factor every time: the /sso browser session does not sign anyone into the
      // console, so signing out of it means out.
      prompt: "login"
    })
    const response = HttpServerResponse.empty({
      status: 303,
      headers: { location: `${settings.issuer}/authorize?${query}`, "cache-control": "no-store" }
    })
    return yield* setSignInCookie(response, cookie, SIGN_IN_TTL_MS / 1000)
  })

const refused = (reason: string, extra: Record<string, unknown> = {}) =>
  Effect.flatMap(clientAddress, (address) =>
    securityEvent("console.sign_in_refused", { reason, client_address: address, ...extra })
  )

/**
 * `GET /console/callback`: the sign-in's answer. The state must be the one this browser's sign-in
 * cookie started (single use, 10 minutes), `iss` the gateway's issuer (RFC 9207); the code is redeemed
 * in-process by the authorization server's own code service (no HTTP round trip to itself), and the
 * access token is then put to the same check as every later request: only an administrator now gets a
 * console session. The answer is a page that moves on to the console with a same-site navigation,
 * so the SameSite=Strict session cookie is sent even when the sign-in passed through another site.
 */
export const signInCallback = (settings: ConsoleSettings, check: AdminCheck) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = new URL(request.url, "http://console.invalid").searchParams
    const pending = yield* (yield* ConsoleSessions).takeSignIn(request.cookies[SIGN_IN_COOKIE])
    const finish = (response: HttpServerResponse.HttpServerResponse) => setSignInCookie(response, "", 0)
    const again = (status: number, message: string) => finish(problemPage(status, message))
    if (pending === undefined) {
      yield* refused("no_sign_in")
      return yield* again(
        400,
        "This sign-in was not started in this browser, was used already or expired. Start again."
      )
    }
    const state = query.get("state") ?? ""
    if (!constantTimeEqual(state, pending.state)) {
      yield* refused("state_mismatch")
      return yield* again(400, "The sign-in's answer does not belong to the sign-in this browser started. Start again.")
    }
    if (query.get("iss") !== settings.issuer) {
      yield* refused("issuer_mismatch")
      return yield* again(400, "The sign-in's answer does not come from this gateway's authorization server.")
    }
    const error = query.get("error")
    if (error !== null) {
      yield* refused("authorization_error", { error: error.slice(0, 64) })
      return yield* again(403, `The sign-in was not completed (${error.slice(0, 64)}).`)
    }
    const auth = yield* authSettings
    const client = auth.clients.find((each) => each.id === settings.clientId)
    if (client === undefined) return yield* again(503, "The console's client is not registered.")
    const exchanged = yield* exchangeCode(
      OAuthParams.fromSearch(
        new URLSearchParams({
          grant_type: "authorization_code",
          code: query.get("code") ?? "",
          redirect_uri: settings.redirectUri,
          code_verifier: pending.verifier,
          resource: settings.adminOrigin,
          client_id: settings.clientId
        })
      ),
      client,
      auth
    ).pipe(Effect.either)
    if (exchanged._tag === "Left") {
      yield* refused("code_refused")
      return yield* again(400, `The sign-in could not be completed: ${exchanged.left.description}`)
    }
    const tokens = exchanged.right
    const admin = yield* check(`Bearer ${tokens.access_token}`).pipe(Effect.either)
    if (admin._tag === "Left") {
      yield* refused("not_administrator", { error: admin.left.code })
      return yield* again(403, `You signed in, but the console is for administrators: ${admin.left.description}`)
    }
    const now = yield* Clock.currentTimeMillis
    const cookie = yield* (yield* ConsoleSessions).create({
      userId: admin.right.userId,
      accessToken: tokens.access_token,
      accessExpiresAt: now + tokens.expires_in * 1000,
      refreshToken: tokens.refresh_token
    })
    yield* securityEvent("console.signed_in", {
      user_id: admin.right.userId,
      client_address: yield* clientAddress,
      session_id: admin.right.caller.sessionId
    })
    const page = consolePage(
      "Signed in",
      html`<p>You are signed in. <a href="${pending.returnTo}">Continue to the console</a>.</p>`,
      200,
      undefined,
      { refresh: `0;url=${pending.returnTo}` }
    )
    return yield* Effect.flatMap(setSessionCookie(page, cookie), finish)
  })

/** Renew when the access token has less than this left. */
const RENEW_BEFORE_MS = 30_000

/**
 * The session's access token, renewed in-process through the authorization server's own refresh
 * service when it is about to expire (one renewal at a time per session; the refresh token rotates).
 * undefined when it cannot be renewed: no refresh token, or the authorization server refused (the
 * session was revoked, the 8 hours are over, the person lost a scope's role).
 */
export const currentAccessToken = (settings: ConsoleSettings, session: ConsoleSession) =>
  Effect.gen(function* () {
    const fresh = (now: number) => session.accessExpiresAt - now > RENEW_BEFORE_MS
    if (fresh(yield* Clock.currentTimeMillis)) return session.accessToken
    return yield* session.renewal.withPermits(1)(
      Effect.gen(function* () {
        if (fresh(yield* Clock.currentTimeMillis)) return session.accessToken
        if (session.refreshToken === undefined) return undefined
        const auth = yield* authSettings
        const client = auth.clients.find((each) => each.id === settings.clientId)
        if (client === undefined) return undefined
        const renewed = yield* refreshTokens(
          OAuthParams.fromSearch(
            new URLSearchParams({
              grant_type: "refresh_token",
              refresh_token: session.refreshToken,
              resource: settings.adminOrigin,
              client_id: settings.clientId
            })
          ),
          client,
          auth
        ).pipe(Effect.option)
        if (renewed._tag === "None") return undefined
        const now = yield* Clock.currentTimeMillis
        session.accessToken = renewed.value.access_token
        session.accessExpiresAt = now + renewed.value.expires_in * 1000
        session.refreshToken = renewed.value.refresh_token
        return session.accessToken
      })
    )
  })
