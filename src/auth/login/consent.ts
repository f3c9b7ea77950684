import { Clock, Effect, Option } from "effect"
import { ClientGrantRepo } from "../../store/client-grants.js"
import { seeOther } from "../pages/html.js"
import { PendingAuthorizations } from "../pending.js"
import { parseScopeText, scopeText } from "../scopes.js"
import { authSettings } from "../settings.js"
import { clientRedirect, issueCodeAndRedirect } from "./finish.js"
import { readPageForm } from "./form.js"
import { answerPage } from "./page-response.js"
import { postedTransaction } from "./transaction.js"

/**
 * `POST /sso/consent` (`client_authorization.enabled`): "allow" stores the grant (adding these scopes
 * to any earlier grant of the client) and issues the code; "deny" returns `access_denied`.
 */
export const consentEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const params = yield* readPageForm
    const transaction = yield* postedTransaction(settings, params)
    const request = transaction.request
    const { userId, authTime } = transaction
    if (transaction.stage !== "consent" || request === undefined || userId === undefined || authTime === undefined) {
      return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
    }
    const decision = params.single("decision")
    if (decision._tag !== "Value" || decision.value !== "allow") {
      yield* (yield* PendingAuthorizations).finish(transaction.id)
      return clientRedirect(settings, request, { error: "access_denied", error_description: "The person declined." })
    }
    const grants = yield* ClientGrantRepo
    const earlier = yield* grants.find(userId, request.clientId)
    const scope = new Set([
      ...Option.match(earlier, { onNone: () => [], onSome: (row) => parseScopeText(row.scope) }),
      ...request.scope
    ])
    yield* grants.upsert(userId, request.clientId, scopeText([...scope]), new Date(yield* Clock.currentTimeMillis))
    return yield* issueCodeAndRedirect(settings, transaction, request, userId, authTime)
  })
).pipe(Effect.withSpan("consentEndpoint"))
