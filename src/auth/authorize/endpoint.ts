import { HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { currentSignIn } from "../browser-session.js"
import { browserBinding, setBrowserCookie } from "../cookies.js"
import { clientRedirect, continueAuthorization } from "../login/finish.js"
import { answerPage } from "../login/page-response.js"
import { openTransaction } from "../login/transaction.js"
import { seeOther } from "../pages/html.js"
import { messagePage } from "../pages/message.js"
import { PendingAuthorizations } from "../pending.js"
import { authSettings } from "../settings.js"
import { runChecks, trust } from "./checks.js"
import { OAuthParams } from "./params.js"

/** Longer request lines are not authorization requests anyone legitimate sends. */
export const MAX_AUTHORIZE_URL_LENGTH = 8192

const errorPage = (error: string, description: string) =>
  messagePage("Sign-in cannot start", `${description} (${error})`, 400)

/**
 * `GET /sso/authorize` (RFC 6749 §4.1.1 with PKCE, RFC 8707, RFC 9207). Until the client and its
 * redirect URI are established, errors are pages; after that they go to the client. A valid request
 * becomes a 5-minute login transaction: the sign-in page, or straight on when this browser is
 * already signed in (unless `prompt=login`).
 */
export const authorizeEndpoint = answerPage(
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const settings = yield* authSettings
    if (request.url.length > MAX_AUTHORIZE_URL_LENGTH) {
      return errorPage("invalid_request", "The authorization request is too long.")
    }
    const params = OAuthParams.fromSearch(new URL(request.url, settings.origin).searchParams)
    const trusted = trust(params, settings.clients)
    if (Either.isLeft(trusted)) return errorPage(trusted.left.error, trusted.left.description)
    const checked = runChecks(params, trusted.right, settings.scopesSupported)
    if (Either.isLeft(checked)) {
      const { error, state } = checked.left
      return clientRedirect(
        settings,
        { redirectUri: trusted.right.redirectUri, state },
        { error: error.error, error_description: error.description }
      )
    }
    const authorization = checked.right
    const binding = yield* browserBinding(settings)
    const transaction = yield* openTransaction(binding.value, authorization)
    const signedIn = authorization.prompt.has("login") ? Option.none() : yield* currentSignIn(settings)
    let response: HttpServerResponse.HttpServerResponse
    if (Option.isSome(signedIn)) {
      response = yield* continueAuthorization(
        settings,
        transaction,
        authorization,
        signedIn.value.user,
        signedIn.value.authTime
      )
    } else if (authorization.prompt.has("none")) {
      yield* (yield* PendingAuthorizations).finish(transaction.id)
      response = clientRedirect(settings, authorization, {
        error: "login_required",
        error_description: "Sign-in is required."
      })
    } else {
      response = seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
    }
    return binding.isNew ? yield* setBrowserCookie(settings, binding.value)(response) : response
  })
).pipe(Effect.withSpan("authorizeEndpoint"))
