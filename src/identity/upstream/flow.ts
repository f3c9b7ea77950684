import { Data, Effect, Redacted } from "effect"
import * as oauth from "oauth4webapi"
import { isRecord } from "../../json.js"
import { type ClaimsProblem, identityFrom, type UpstreamIdentity } from "./claims.js"
import type { UpstreamConnection } from "./connection.js"
import { upstreamFetch } from "./https-fetch.js"

/**
 * Why a sign-in through the upstream was refused (docs/enterprise-sign-in.md, "Refusals"). `check`
 * names the failed ID-token check (`signature`, `issuer`, `audience`, `expiry`, `nonce`, `algorithm`,
 * `auth_time`) when there is one. `detail` is the library's message: safe to log, never a token.
 */
export type UpstreamReason =
  | "discovery_failed"
  | "discovery_without_s256"
  | "upstream_error"
  | "authorization_response_invalid"
  | "token_request_failed"
  | "id_token_invalid"
  | "userinfo_failed"
  | ClaimsProblem

export class UpstreamRefused extends Data.TaggedError("UpstreamRefused")<{
  readonly reason: UpstreamReason
  readonly check?: string
  readonly detail?: string
}> {}

/** What the gateway keeps between sending the browser to the upstream and its coming back. */
export interface UpstreamAttempt {
  /** The connection it went to: a callback is completed only with that same connection. */
  readonly namespace: string
  readonly state: string
  readonly nonce: string
  readonly verifier: string
  /** Step-up (approvals): the `max_age` sent, so `auth_time` is checked against it. */
  readonly maxAge: number | undefined
}

export interface StepUp {
  readonly acrValues: ReadonlyArray<string>
  readonly maxAge: number
}

const fetchOf = (connection: UpstreamConnection) => upstreamFetch({ ca: connection.ca })
const options = (connection: UpstreamConnection) => ({ [oauth.customFetch]: fetchOf(connection) })
const client = (connection: UpstreamConnection): oauth.Client => ({ client_id: connection.clientId })
const clientAuth = (connection: UpstreamConnection) =>
  connection.tokenAuthMethod === "client_secret_post"
    ? oauth.ClientSecretPost(Redacted.value(connection.clientSecret))
    : oauth.ClientSecretBasic(Redacted.value(connection.clientSecret))

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * The upstream's metadata: OIDC discovery (the issuer must echo, and PKCE S256 must be advertised), or
 * for OAuth2 the configured endpoints (no discovery).
 */
export const discover = (connection: UpstreamConnection): Effect.Effect<oauth.AuthorizationServer, UpstreamRefused> => {
  const endpoints = connection.endpoints
  if (connection.protocol === "oauth2" && endpoints !== undefined) {
    return Effect.succeed({
      issuer: connection.issuer,
      authorization_endpoint: endpoints.authorization,
      token_endpoint: endpoints.token,
      userinfo_endpoint: endpoints.userinfo
    })
  }
  return Effect.tryPromise({
    try: async () => {
      const issuer = new URL(connection.issuer)
      const response = await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...options(connection) })
      return oauth.processDiscoveryResponse(issuer, response)
    },
    catch: (error) => new UpstreamRefused({ reason: "discovery_failed", detail: messageOf(error) })
  }).pipe(
    Effect.filterOrFail(
      (server) => server.code_challenge_methods_supported?.includes("S256") === true,
      () =>
        new UpstreamRefused({
          reason: "discovery_without_s256",
          detail: "the provider's discovery document does not list S256 in code_challenge_methods_supported"
        })
    )
  )
}

/** A fresh state, nonce and PKCE verifier for one trip to the upstream. */
export const newAttempt = (namespace: string, stepUp: StepUp | undefined): UpstreamAttempt => ({
  namespace,
  state: oauth.generateRandomState(),
  nonce: oauth.generateRandomNonce(),
  verifier: oauth.generateRandomCodeVerifier(),
  maxAge: stepUp?.maxAge
})

/** Where the browser is sent: code flow with PKCE S256, state, and for OIDC a nonce (and step-up parameters). */
export const authorizationUrl = async (
  server: oauth.AuthorizationServer,
  connection: UpstreamConnection,
  attempt: UpstreamAttempt,
  redirectUri: string,
  stepUp: StepUp | undefined
): Promise<string> => {
  const url = new URL(server.authorization_endpoint ?? connection.issuer)
  const set = (name: string, value: string) => url.searchParams.set(name, value)
  set("response_type", "code")
  set("client_id", connection.clientId)
  set("redirect_uri", redirectUri)
  set("scope", connection.scopes.join(" "))
  set("state", attempt.state)
  set("code_challenge", await oauth.calculatePKCECodeChallenge(attempt.verifier))
  set("code_challenge_method", "S256")
  if (connection.protocol === "oidc") {
    set("nonce", attempt.nonce)
    if (stepUp !== undefined) {
      if (stepUp.acrValues.length > 0) set("acr_values", stepUp.acrValues.join(" "))
      set("max_age", String(stepUp.maxAge))
      set("prompt", "login")
    }
  }
  return url.toString()
}

/** The ID-token check an oauth4webapi error stands for, for the log. */
const idTokenCheck = (error: unknown): string => {
  if (error instanceof oauth.UnsupportedOperationError) return "algorithm"
  if (!(error instanceof oauth.OperationProcessingError)) return "signature"
  const claim = isRecord(error.cause) && typeof error.cause["claim"] === "string" ? error.cause["claim"] : undefined
  if (error.code === oauth.JWT_TIMESTAMP_CHECK) return claim === "auth_time" ? "auth_time" : "expiry"
  if (claim === "aud" || claim === "azp") return "audience"
  if (claim === "iss") return "issuer"
  if (claim === "nonce") return "nonce"
  if (claim === "auth_time") return "auth_time"
  if (error.code === oauth.KEY_SELECTION) return "signature"
  if (/alg/i.test(error.message)) return "algorithm"
  return claim ?? "claims"
}

const attemptStep = <A>(reason: UpstreamReason, run: () => Promise<A>, check?: (error: unknown) => string) =>
  Effect.tryPromise({
    try: run,
    catch: (error) =>
      new UpstreamRefused({
        reason: error instanceof oauth.AuthorizationResponseError ? "upstream_error" : reason,
        detail: messageOf(error),
        ...(check === undefined ? {} : { check: check(error) })
      })
  })

/** UserInfo for OAuth2 upstreams: a bearer GET, a JSON object answer. */
const userInfo = (connection: UpstreamConnection, server: oauth.AuthorizationServer, accessToken: string) =>
  attemptStep("userinfo_failed", async () => {
    const response = await fetchOf(connection)(server.userinfo_endpoint ?? "", {
      headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" }
    })
    if (response.status !== 200) throw new Error(`UserInfo answered HTTP ${response.status}`)
    const body: unknown = await response.json().catch(() => undefined)
    if (!isRecord(body)) throw new Error("UserInfo did not answer a JSON object")
    return body
  })

/**
 * The browser came back to `{base_url}/sso/callback`: check the authorization response (state, and
 * `iss` where the upstream advertises it), redeem the code with the client secret and the PKCE
 * verifier, and read who signed in — for OIDC from the ID token, whose signature, issuer, audience,
 * expiry and nonce are checked; for OAuth2 from UserInfo. The upstream's tokens are dropped here.
 */
export const completeSignIn = (
  server: oauth.AuthorizationServer,
  connection: UpstreamConnection,
  callback: URL,
  attempt: UpstreamAttempt,
  redirectUri: string
): Effect.Effect<UpstreamIdentity, UpstreamRefused> =>
  Effect.gen(function* () {
    const oidc = connection.protocol === "oidc"
    const parameters = yield* Effect.try({
      try: () => oauth.validateAuthResponse(server, client(connection), callback, attempt.state),
      catch: (error) =>
        new UpstreamRefused({
          reason:
            error instanceof oauth.AuthorizationResponseError ? "upstream_error" : "authorization_response_invalid",
          detail: messageOf(error)
        })
    })
    const response = yield* attemptStep("token_request_failed", () =>
      oauth.authorizationCodeGrantRequest(
        server,
        client(connection),
        clientAuth(connection),
        parameters,
        redirectUri,
        attempt.verifier,
        options(connection)
      )
    )
    if (!oidc) {
      const tokens = yield* attemptStep("token_request_failed", () =>
        oauth.processAuthorizationCodeResponse(server, client(connection), response, { requireIdToken: false })
      )
      const claims = yield* userInfo(connection, server, tokens.access_token)
      return yield* identityOrRefusal(connection, claims, false)
    }
    const tokens = yield* attemptStep(
      "id_token_invalid",
      () =>
        oauth.processAuthorizationCodeResponse(server, client(connection), response, {
          expectedNonce: attempt.nonce,
          requireIdToken: true,
          ...(attempt.maxAge === undefined ? {} : { maxAge: attempt.maxAge })
        }),
      idTokenCheck
    )
    // oauth4webapi trusts an ID token from the token endpoint by TLS alone; the gateway checks its
    // signature against the provider's keys as well, before any claim is used.
    yield* attemptStep(
      "id_token_invalid",
      () => oauth.validateApplicationLevelSignature(server, response, options(connection)),
      (error) => (error instanceof oauth.UnsupportedOperationError ? "algorithm" : "signature")
    )
    const claims = oauth.getValidatedIdTokenClaims(tokens)
    if (claims === undefined) return yield* new UpstreamRefused({ reason: "id_token_invalid", check: "missing" })
    return yield* identityOrRefusal(connection, claims as Record<string, unknown>, true)
  })

const identityOrRefusal = (connection: UpstreamConnection, claims: Record<string, unknown>, oidc: boolean) => {
  const identity = identityFrom(connection, claims, oidc)
  return typeof identity === "string"
    ? Effect.fail(new UpstreamRefused({ reason: identity }))
    : Effect.succeed(identity)
}

/** What a probe of an OIDC connection found (docs/enterprise-sign-in.md, "Trying a connection"). */
export interface ProbeFindings {
  readonly issuer: string
  readonly authorizationEndpoint: string | undefined
  readonly tokenEndpoint: string | undefined
  readonly signingKeys: number
}

/**
 * Connectivity only: discovery (issuer echoed, S256 offered) and the key set, through the same
 * transport as sign-in. Nothing is signed in, nothing is kept.
 */
export const probeConnection = (connection: UpstreamConnection): Effect.Effect<ProbeFindings, UpstreamRefused> =>
  Effect.gen(function* () {
    const server = yield* discover(connection)
    const keys = yield* attemptStep("discovery_failed", async () => {
      if (server.jwks_uri === undefined) throw new Error("the discovery document names no jwks_uri")
      const response = await fetchOf(connection)(server.jwks_uri, { headers: { accept: "application/json" } })
      const body: unknown = await response.json().catch(() => undefined)
      if (response.status !== 200 || !isRecord(body) || !Array.isArray(body["keys"])) {
        throw new Error(`the key set at jwks_uri answered HTTP ${response.status} without a "keys" array`)
      }
      return body["keys"].length
    })
    return {
      issuer: server.issuer,
      authorizationEndpoint: server.authorization_endpoint,
      tokenEndpoint: server.token_endpoint,
      signingKeys: keys
    }
  })
