import { Clock, Effect, Option } from "effect"
import { ClientGrantRepo } from "../store/client-grants.js"
import { SessionRepo } from "../store/sessions.js"
import { currentSignIn, portalCsrfToken } from "./browser-session.js"
import { readPageForm } from "./login/form.js"
import { answerPage, PageResponse } from "./login/page-response.js"
import { requireCsrf, requireSameOrigin } from "./login/transaction.js"
import { grantsPage } from "./pages/grants.js"
import { seeOther } from "./pages/html.js"
import { authSettings } from "./settings.js"

const requireSignIn = Effect.gen(function* () {
  const signedIn = yield* currentSignIn(yield* authSettings)
  if (Option.isNone(signedIn)) return yield* new PageResponse({ response: seeOther("/sso") })
  return signedIn.value
})

/** `GET /sso/grants`: the signed-in person's client grants, each with a revoke button. */
export const grantsEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const signedIn = yield* requireSignIn
    const grants = yield* (yield* ClientGrantRepo).listForUser(signedIn.user.id)
    return grantsPage(signedIn.user.display_name, grants, portalCsrfToken(signedIn), settings.consentRequired)
  })
).pipe(Effect.withSpan("grantsEndpoint"))

/**
 * `POST /sso/grants/revoke`: deletes the grant and revokes that client's sessions for this person, so
 * the client's next /mcp request is denied (the session check) and its refresh tokens stop working.
 */
export const revokeGrantEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    yield* requireSameOrigin(settings)
    const params = yield* readPageForm
    const signedIn = yield* requireSignIn
    yield* requireCsrf(portalCsrfToken(signedIn), params)
    const client = params.single("client_id")
    if (client._tag === "Value") {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* (yield* ClientGrantRepo).remove(signedIn.user.id, client.value)
      yield* (yield* SessionRepo).revokeForUserClient(signedIn.user.id, client.value, "grant_revoked", now)
    }
    return seeOther("/sso/grants")
  })
).pipe(Effect.withSpan("revokeGrantEndpoint"))
