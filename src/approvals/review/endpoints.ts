import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { OAuthParams } from "../../auth/authorize/params.js"
import { currentSignIn, type SignedIn } from "../../auth/browser-session.js"
import { readPageForm } from "../../auth/login/form.js"
import { answerPage, PageResponse } from "../../auth/login/page-response.js"
import { requireCsrf, requireSameOrigin } from "../../auth/login/transaction.js"
import { seeOther } from "../../auth/pages/html.js"
import { messagePage } from "../../auth/pages/message.js"
import { visibleText } from "../../auth/pages/visible-text.js"
import { authSettings } from "../../auth/settings.js"
import { Config } from "../../config/service.js"
import { sha256Hex } from "../../crypto/hashing.js"
import { Notifier } from "../../events/notifier.js"
import { UpstreamSignIn } from "../../identity/upstream/service.js"
import type { ApprovalRow } from "../../store/approvals.js"
import { UserRepo } from "../../store/users.js"
import { APPROVAL_ID } from "../intent.js"
import { isRequester, mayView, type Reviewer, reviewRefusal } from "../reviewers.js"
import { Approvals, type ReviewOutcome } from "../service.js"
import { approvalSettingsOf } from "../settings.js"
import { StepUps } from "../step-up.js"
import { detailPage, listPage, type ReviewItem } from "./pages.js"
import { startStepUp } from "./step-up-start.js"

const fail = (response: HttpServerResponse.HttpServerResponse) => Effect.fail(new PageResponse({ response }))
const notFound = () => fail(messagePage("Not found", "No such approval, or it is not yours to review.", 404))

/** The review forms' anti-CSRF token: derived from the HttpOnly sign-in cookie, like the grants portal's. */
export const reviewCsrfOf = (cookieToken: string) => sha256Hex(`approval-csrf:${cookieToken}`)
const reviewCsrf = (signedIn: SignedIn) => reviewCsrfOf(signedIn.token)

/** The signed-in person as a reviewer; not signed in → the sign-in page, which comes back to `next`. */
const requireReviewer = (next: string) =>
  Effect.gen(function* () {
    const signedIn = yield* currentSignIn(yield* authSettings)
    if (Option.isNone(signedIn)) return yield* fail(seeOther(`/sso?next=${encodeURIComponent(next)}`))
    const connection = yield* (yield* UpstreamSignIn).current
    const reviewer = yield* (yield* Approvals).reviewerOf(signedIn.value.user, connection?.namespace)
    return { signedIn: signedIn.value, reviewer }
  })

const approvalId = Effect.gen(function* () {
  const id = (yield* HttpRouter.params)["id"]
  return id !== undefined && APPROVAL_ID.test(id) ? id : yield* notFound()
})

/** Who asked, as reviewers know them. */
const itemOf = (row: ApprovalRow, reviewer: Reviewer) =>
  Effect.gen(function* () {
    const user = row.requester_id === null ? Option.none() : yield* (yield* UserRepo).findById(row.requester_id)
    const requester = Option.match(user, {
      onNone: () => row.subject,
      onSome: (found) => (found.username === null ? found.display_name : `${found.display_name} (${found.username})`)
    })
    return { row, requester, mine: isRequester(row, reviewer.user) } satisfies ReviewItem
  })

/** `GET /sso/approvals` */
export const listEndpoint = answerPage(
  Effect.gen(function* () {
    const { signedIn, reviewer } = yield* requireReviewer("/sso/approvals")
    const rows = yield* (yield* Approvals).openFor(reviewer)
    const items = yield* Effect.forEach(rows, (row) => itemOf(row, reviewer))
    return listPage(signedIn.user.display_name, reviewer.approver, items)
  })
).pipe(Effect.withSpan("approvals.listEndpoint"))

const notices: Readonly<Record<string, string>> = {
  approve: "Your approval was recorded.",
  reject: "The request was rejected.",
  revoke: "The approval was revoked.",
  "step-up": "Your identity provider confirmed you: you can approve now."
}

/** `GET /sso/approvals/{id}` */
export const detailEndpoint = answerPage(
  Effect.gen(function* () {
    const id = yield* approvalId
    const { signedIn, reviewer } = yield* requireReviewer(`/sso/approvals/${id}`)
    const approvals = yield* Approvals
    const detail = yield* approvals.detail(id)
    if (detail === undefined || !mayView(detail.row, reviewer)) return yield* notFound()
    const { row, votes } = detail
    const { config } = yield* Config
    const settings = approvalSettingsOf(config)
    const csrf = reviewCsrf(signedIn)
    const pending = row.state === "pending"
    const voted = votes.some((vote) => vote.reviewer_id === reviewer.user.id)
    const refusal = reviewRefusal(row, reviewer, "approve")
    const intent = yield* approvals.intentOf(row)
    // Nobody approves what the page cannot show.
    let approve = pending && refusal === undefined && !voted && intent !== undefined
    let stepUpUrl: string | undefined
    let approveBlocked: string | undefined = pending
      ? voted
        ? "You have approved this request."
        : refusal?.message
      : undefined
    if (approve && row.require_step_up) {
      const evidence = yield* (yield* StepUps).find(sha256Hex(signedIn.token), row.id, reviewer.user.id)
      if (evidence === undefined || !settings.stepUpAcrValues.includes(evidence.acr)) {
        approve = false
        const connection = yield* (yield* UpstreamSignIn).current
        if (connection?.protocol === "oidc" && reviewer.user.namespace === connection.namespace) {
          stepUpUrl = `/sso/approvals/${row.id}/step-up?csrf=${csrf}`
        } else {
          approveBlocked =
            "Approving this request needs a fresh sign-in with stronger authentication at your organization's OpenID Connect provider; a local, LDAP or OAuth2 sign-in cannot provide it."
        }
      }
    }
    const url = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://gateway.invalid")
    const done = url.searchParams.get("done") ?? ""
    const notice = Object.hasOwn(notices, done) ? notices[done] : undefined
    return detailPage(
      yield* itemOf(row, reviewer),
      votes,
      intent === undefined ? undefined : visibleText(JSON.stringify(intent.arguments, null, 2)),
      {
        csrf,
        approve,
        stepUpUrl,
        approveBlocked,
        reject: pending && reviewRefusal(row, reviewer, "reject") === undefined,
        revoke: row.state === "approved" && reviewRefusal(row, reviewer, "revoke") === undefined
      },
      notice,
      yield* (yield* Notifier).failuresOf(row.id)
    )
  })
).pipe(Effect.withSpan("approvals.detailEndpoint"))

/** Who may not (403), what does not exist (404), and a state or step-up that does not allow it now (409). */
const refusalStatus = (reason: string) =>
  reason === "not_found" ? 404 : ["not_approver", "not_listed", "self_approval"].includes(reason) ? 403 : 409

/** The answer to a review action: back to the approval, or a page saying why nothing changed. */
const answered = (id: string, action: string, outcome: ReviewOutcome) =>
  outcome._tag === "Done"
    ? seeOther(`/sso/approvals/${id}?done=${action}`)
    : messagePage("Not done", `${outcome.message} Nothing was changed.`, refusalStatus(outcome.reason))

/** A posted review form: same origin, signed in, the form's own anti-CSRF token. */
const postedReview = Effect.gen(function* () {
  yield* requireSameOrigin(yield* authSettings)
  const id = yield* approvalId
  const params = yield* readPageForm
  const { signedIn, reviewer } = yield* requireReviewer(`/sso/approvals/${id}`)
  yield* requireCsrf(reviewCsrf(signedIn), params)
  return { id, params, signedIn, reviewer }
})

/** `POST /sso/approvals/{id}/approve`: one vote, for exactly the intent the page showed (`intent`). */
export const approveEndpoint = answerPage(
  Effect.gen(function* () {
    const { id, params, signedIn, reviewer } = yield* postedReview
    const intent = params.single("intent")
    const { config } = yield* Config
    const evidence = yield* (yield* StepUps).find(sha256Hex(signedIn.token), id, reviewer.user.id)
    const outcome = yield* (yield* Approvals).approve(
      reviewer,
      id,
      intent._tag === "Value" ? intent.value : "",
      evidence,
      approvalSettingsOf(config)
    )
    return answered(id, "approve", outcome)
  })
).pipe(Effect.withSpan("approvals.approveEndpoint"))

export const rejectEndpoint = answerPage(
  Effect.gen(function* () {
    const { id, reviewer } = yield* postedReview
    return answered(id, "reject", yield* (yield* Approvals).reject(reviewer, id))
  })
).pipe(Effect.withSpan("approvals.rejectEndpoint"))

export const revokeEndpoint = answerPage(
  Effect.gen(function* () {
    const { id, reviewer } = yield* postedReview
    return answered(id, "revoke", yield* (yield* Approvals).revoke(reviewer, id))
  })
).pipe(Effect.withSpan("approvals.revokeEndpoint"))

/**
 * `GET /sso/approvals/{id}/step-up?csrf=…`: a reviewer of an approval that needs step-up signs in again
 * at the OpenID Connect provider (`prompt=login`, `max_age`, `acr_values`); the callback records the
 * verified `acr` and `auth_time` for this approval in this browser sign-in (src/approvals/step-up.ts).
 */
export const stepUpEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    yield* requireSameOrigin(settings)
    const id = yield* approvalId
    const { signedIn, reviewer } = yield* requireReviewer(`/sso/approvals/${id}`)
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = new URL(request.url, settings.origin).searchParams
    yield* requireCsrf(reviewCsrf(signedIn), OAuthParams.fromSearch(query))
    const row = yield* (yield* Approvals).detail(id)
    if (row === undefined || !mayView(row.row, reviewer)) return yield* notFound()
    const refusal = reviewRefusal(row.row, reviewer, "approve")
    if (refusal !== undefined) return messagePage("Not allowed", refusal.message, 403)
    return yield* startStepUp(settings, signedIn, { approvalId: id })
  })
).pipe(Effect.withSpan("approvals.stepUpEndpoint"))
