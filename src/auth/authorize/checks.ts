import { Either } from "effect"
import type { DownstreamClient } from "../../config/schema.js"
import type { ErrorCode } from "../../http/error-codes.js"
import { redirectUriMatches } from "../redirect-uri.js"
import { grantScope } from "../scopes.js"
import { AuthorizePageError, AuthorizeRedirectError } from "./errors.js"
import { describeProblem, type OAuthParams } from "./params.js"
import type { AuthorizationRequest } from "./request.js"

/**
 * The authorization endpoint as small named checks (node-oidc-provider's `check_*` actions), each
 * testable alone. The first two establish who the client is and where errors may be sent; until both
 * pass, failures are pages. The rest report to the client's redirect URI.
 */

type Client = typeof DownstreamClient.Type

export interface Trusted {
  readonly client: Client
  readonly redirectUri: string
}

/** A parameter the page-level checks need: exactly one value, else a page error. */
const requiredForPage = (params: OAuthParams, name: string): Either.Either<string, AuthorizePageError> => {
  const found = params.required(name)
  return found._tag === "Value"
    ? Either.right(found.value)
    : Either.left(
        new AuthorizePageError({
          error: "invalid_request",
          description: describeProblem(found._tag === "Problem" ? found.problem : "missing", name)
        })
      )
}

export const checkClient = (params: OAuthParams, clients: ReadonlyArray<Client>) =>
  Either.flatMap(requiredForPage(params, "client_id"), (clientId) => {
    const client = clients.find((candidate) => candidate.id === clientId)
    return client === undefined
      ? Either.left(
          new AuthorizePageError({
            error: "invalid_client",
            description: "This application is not registered with the gateway (auth.sso.clients)."
          })
        )
      : Either.right(client)
  })

export const checkRedirectUri = (params: OAuthParams, client: Client) =>
  Either.flatMap(requiredForPage(params, "redirect_uri"), (redirectUri) =>
    redirectUriMatches(client.redirect_uris, redirectUri)
      ? Either.right(redirectUri)
      : Either.left(
          new AuthorizePageError({
            error: "invalid_request",
            description: "The redirect_uri is not one registered for this application."
          })
        )
  )

export const trust = (params: OAuthParams, clients: ReadonlyArray<Client>) =>
  Either.flatMap(checkClient(params, clients), (client) =>
    Either.map(checkRedirectUri(params, client), (redirectUri): Trusted => ({ client, redirectUri }))
  )

type Draft = Partial<Omit<AuthorizationRequest, "clientId" | "redirectUri">>
type Check = (
  params: OAuthParams,
  trusted: Trusted,
  supportedScopes: ReadonlyArray<string>
) => Either.Either<Draft, AuthorizeRedirectError>

const invalid = (description: string, error: ErrorCode = "invalid_request") =>
  Either.left(new AuthorizeRedirectError({ error, description }))

const optional = (params: OAuthParams, name: string) => {
  const found = params.single(name)
  return found._tag === "Problem"
    ? invalid(describeProblem(found.problem, found.name))
    : Either.right(found._tag === "Value" ? found.value : undefined)
}

/** First, so every later error can echo it: `state` is opaque, at most one, and returned once. */
export const checkState: Check = (params) => Either.map(optional(params, "state"), (state) => ({ state }))

export const checkNoRequestObject: Check = (params) =>
  params.has("request")
    ? invalid("Request objects are not supported.", "request_not_supported")
    : params.has("request_uri")
      ? invalid("request_uri is not supported.", "request_uri_not_supported")
      : Either.right({})

export const checkResponseType: Check = (params) =>
  Either.flatMap(optional(params, "response_type"), (type) =>
    type === undefined
      ? invalid(describeProblem("missing", "response_type"))
      : type === "code"
        ? Either.right({})
        : invalid("Only response_type=code is supported.", "unsupported_response_type")
  )

export const checkResponseMode: Check = (params) =>
  Either.flatMap(optional(params, "response_mode"), (mode) =>
    mode === undefined || mode === "query" ? Either.right({}) : invalid("Only response_mode=query is supported.")
  )

const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

/** PKCE is mandatory and only S256: an absent method means `plain` (RFC 7636 §4.3), which is refused. */
export const checkPkce: Check = (params) =>
  Either.flatMap(optional(params, "code_challenge"), (challenge) =>
    Either.flatMap(optional(params, "code_challenge_method"), (method) => {
      if (challenge === undefined) return invalid("PKCE is required: send code_challenge with method S256.")
      if (method !== "S256") return invalid("Only the S256 code_challenge_method is supported; plain is refused.")
      if (!S256_CHALLENGE.test(challenge)) return invalid("code_challenge must be a base64url SHA-256 (43 characters).")
      return Either.right({ codeChallenge: challenge })
    })
  )

/** RFC 8707: one resource, one of the client's; with a single registered resource it may be omitted. */
export const checkResource: Check = (params, { client }) => {
  const found = params.single("resource")
  if (found._tag === "Problem") {
    return found.problem === "duplicated"
      ? invalid("Only one resource per authorization request is supported.", "invalid_target")
      : invalid(describeProblem(found.problem, found.name))
  }
  if (found._tag === "Absent") {
    const [only] = client.resources
    return client.resources.length === 1 && only !== undefined
      ? Either.right({ resource: only })
      : invalid("The resource parameter is required for this application.", "invalid_target")
  }
  return client.resources.includes(found.value)
    ? Either.right({ resource: found.value })
    : invalid("The resource is not one this application may request.", "invalid_target")
}

export const checkScope: Check = (params, _trusted, supported) =>
  Either.flatMap(optional(params, "scope"), (text) => {
    const parsed = grantScope(text, supported)
    return parsed._tag === "Malformed"
      ? invalid("The scope parameter is malformed.", "invalid_scope")
      : Either.right({ scope: parsed.granted })
  })

const PROMPTS = new Set(["none", "login", "consent"])

export const checkPrompt: Check = (params) =>
  Either.flatMap(optional(params, "prompt"), (text) => {
    const values = (text ?? "").split(" ").filter((value) => value !== "")
    if (!values.every((value) => PROMPTS.has(value))) return invalid("Supported prompt values: none, login, consent.")
    if (values.includes("none") && values.length > 1) return invalid("prompt=none cannot be combined.")
    return Either.right({ prompt: new Set(values as ReadonlyArray<"none" | "login" | "consent">) })
  })

/** In order: `state` first so errors echo it, then the rest. */
export const checks: ReadonlyArray<readonly [string, Check]> = [
  ["checkState", checkState],
  ["checkNoRequestObject", checkNoRequestObject],
  ["checkResponseType", checkResponseType],
  ["checkResponseMode", checkResponseMode],
  ["checkPkce", checkPkce],
  ["checkResource", checkResource],
  ["checkScope", checkScope],
  ["checkPrompt", checkPrompt]
]

export interface CheckFailure {
  readonly error: AuthorizeRedirectError
  /** The state to echo with the error, when `checkState` had already passed. */
  readonly state: string | undefined
}

/** Runs every check; the request, or the first failure with the state known so far. */
export const runChecks = (
  params: OAuthParams,
  trusted: Trusted,
  supportedScopes: ReadonlyArray<string>
): Either.Either<AuthorizationRequest, CheckFailure> => {
  let draft: Draft = {}
  for (const [, check] of checks) {
    const result = check(params, trusted, supportedScopes)
    if (Either.isLeft(result)) return Either.left({ error: result.left, state: draft.state })
    draft = { ...draft, ...result.right }
  }
  return Either.right({
    clientId: trusted.client.id,
    redirectUri: trusted.redirectUri,
    state: draft.state,
    codeChallenge: draft.codeChallenge ?? "",
    scope: draft.scope ?? [],
    resource: draft.resource ?? "",
    prompt: draft.prompt ?? new Set()
  })
}
