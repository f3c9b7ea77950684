import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { startStepUp } from "../../approvals/review/step-up-start.js"
import { namesOf } from "../../approvals/reviewers.js"
import { approvalSettingsOf } from "../../approvals/settings.js"
import { StepUps } from "../../approvals/step-up.js"
import { OAuthParams } from "../../auth/authorize/params.js"
import { currentSignIn, type SignedIn } from "../../auth/browser-session.js"
import { addressBucket, clientAddress } from "../../auth/client-address.js"
import { readPageForm } from "../../auth/login/form.js"
import { answerPage, PageResponse } from "../../auth/login/page-response.js"
import { csrfMatches, fromOwnOrigin } from "../../auth/login/transaction.js"
import { seeOther } from "../../auth/pages/html.js"
import { messagePage } from "../../auth/pages/message.js"
import { type AuthSettings, authSettings } from "../../auth/settings.js"
import { Config } from "../../config/service.js"
import { sha256Hex } from "../../crypto/hashing.js"
import { SecurityLog } from "../../events/security-log.js"
import { UpstreamSignIn } from "../../identity/upstream/service.js"
import { AccessState } from "../../policy/access-state.js"
import { roleScopesOf } from "../../policy/roles.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { UserRepo } from "../../store/users.js"
import { ConfigChanges, type Person } from "../changes.js"
import { type ReviewAction, type ReviewFacts, type ReviewSettings, reviewRefusal } from "./checks.js"
import { listPage, proposalPage } from "./pages.js"
import { PROPOSAL_ID, proposalPath, reviewPaths } from "./paths.js"

/**
 * The configuration review pages (docs/tool-sources.md, "Configuration review") on the public
 * listener: `/auth/login?role=security` signs a security reviewer in through the gateway's own /sso
 * sign-in and comes back here. Every request gathers its facts and asks `reviewRefusal` (checks.ts),
 * the one place that decides who may review; each refusal writes one `config.review_refused` line.
 */

const fail = (response: HttpServerResponse.HttpServerResponse) => Effect.fail(new PageResponse({ response }))
const notFound = () => fail(messagePage("Not found", "No such configuration change.", 404))

/** The review forms' anti-CSRF token: derived from the HttpOnly sign-in cookie, like the approval pages'. */
export const configReviewCsrfOf = (cookieToken: string) => sha256Hex(`config-review-csrf:${cookieToken}`)

/** The service that holds proposals (process-wide: src/sources/changes-live.ts). */
const changes = ConfigChanges

const settingsOf = Effect.map(Config, ({ config }): ReviewSettings => {
  const changesSettings = config.admin.approvals.policy_changes
  return {
    securityScopes: roleScopesOf(config).get("security_reviewer") ?? [],
    subjects: changesSettings.subjects,
    requireStepUp: changesSettings.require_step_up
  }
})

/** The signed-in person as the checks see them: their grant and names now. */
const reviewerFacts = (signedIn: SignedIn) =>
  Effect.gen(function* () {
    const user = signedIn.user
    const grant = yield* (yield* AccessState).grantOfUser(user.id)
    const now = yield* Clock.currentTimeMillis
    const connection = yield* (yield* UpstreamSignIn).current
    // Whether their enterprise subject reads like someone's user id: then a `subjects` entry so spelled
    // names that person (the write approvals' rule, src/approvals/reviewers.ts).
    const subject = user.kind === "enterprise" ? user.external_subject : null
    const idTaken = subject !== null && subject !== user.id && Option.isSome(yield* (yield* UserRepo).findById(subject))
    return {
      userId: user.id,
      active: grant?.active === true && (grant.staleAt === undefined || now < grant.staleAt),
      scopes: grant?.active === true ? grant.scopes : new Set<string>(),
      names: namesOf(user, connection?.namespace, idTaken),
      credentialsIssuedBy: user.kind === "local" ? yield* (yield* AuditEventRepo).credentialsIssuer(user.id) : undefined
    }
  })

/** Whether this sign-in stepped up for this proposal, freshly, with an accepted `acr`. */
const steppedUp = (signedIn: SignedIn, proposalId: string) =>
  Effect.gen(function* () {
    const { config } = yield* Config
    const evidence = yield* (yield* StepUps).find(
      sha256Hex(signedIn.token),
      proposalId,
      signedIn.user.id,
      "config_change"
    )
    return evidence !== undefined && approvalSettingsOf(config).stepUpAcrValues.includes(evidence.acr)
  })

/** One `config.review_refused` line, bounded per client address (a script looping on a refusal cannot flood the log). */
const logRefusal = (reason: string, action: ReviewAction, proposalId: string | undefined, userId: string | undefined) =>
  Effect.gen(function* () {
    const address = addressBucket(yield* clientAddress)
    yield* (yield* SecurityLog).limited(address, "config.review_refused", {
      reason,
      action,
      proposal_id: proposalId ?? null,
      user_id: userId ?? null,
      client_address: address
    })
  })

/** A refusal of the pipeline: its log line, and the page saying why. */
const refuse = (facts: ReviewFacts, proposalId: string | undefined) =>
  Effect.gen(function* () {
    const refusal = reviewRefusal(facts)
    if (refusal === undefined) return
    yield* logRefusal(refusal.reason, facts.action, proposalId, facts.reviewer?.userId)
    return yield* fail(messagePage("Not allowed", `${refusal.message} Nothing was changed.`, refusal.status))
  })

interface Gathered {
  readonly settings: AuthSettings
  readonly signedIn: SignedIn | undefined
  readonly facts: ReviewFacts
}

/**
 * The facts of this request for `action` (and, for a post, its form's anti-CSRF token; for a proposal,
 * whether this sign-in stepped up for it); a page request of someone not signed in goes to the
 * sign-in, which comes back to `back`.
 */
const gather = (
  action: ReviewAction,
  back: string,
  form: { readonly csrf: OAuthParams } | undefined,
  proposalId: string | undefined
) =>
  Effect.gen(function* () {
    const settings = yield* authSettings
    const request = yield* HttpServerRequest.HttpServerRequest
    const signedIn = Option.getOrUndefined(yield* currentSignIn(settings))
    const bearer = /^bearer(\s|$)/i.test(request.headers["authorization"] ?? "")
    if (signedIn === undefined && action === "view" && !bearer) {
      return yield* fail(seeOther(`/sso?next=${encodeURIComponent(back)}`))
    }
    const facts: ReviewFacts = {
      action,
      bearer,
      ownOrigin: fromOwnOrigin(settings, request),
      csrf: signedIn !== undefined && form !== undefined && csrfMatches(configReviewCsrfOf(signedIn.token), form.csrf),
      reviewer: signedIn === undefined ? undefined : yield* reviewerFacts(signedIn),
      settings: yield* settingsOf,
      steppedUp: signedIn !== undefined && proposalId !== undefined ? yield* steppedUp(signedIn, proposalId) : false
    }
    return { settings, signedIn, facts } satisfies Gathered
  })

/**
 * The checks, then the proposal: who may not review learns nothing of it (not even whether it exists);
 * then the checks that need it (not one's own).
 */
const reviewable = (facts: ReviewFacts, id: string) =>
  Effect.gen(function* () {
    yield* refuse(facts, id)
    const detail = yield* loadProposal(id)
    yield* refuse({ ...facts, proposal: detail }, id)
    return detail
  })

const proposalIdParam = Effect.gen(function* () {
  const id = (yield* HttpRouter.params)["id"]
  return id !== undefined && PROPOSAL_ID.test(id) ? id : yield* notFound()
})

const loadProposal = (id: string) =>
  Effect.gen(function* () {
    const found = yield* (yield* changes).show(id)
    return Option.isSome(found) ? found.value : yield* notFound()
  })

const personOf = (signedIn: SignedIn): Person => ({ user_id: signedIn.user.id, name: signedIn.user.display_name })

/**
 * `GET /auth/login?role=security[&proposal=<id>]`: the `approval_url` of a proposal. Sends the browser
 * through the /sso sign-in (or straight on, when signed in already) to the proposal's review page, or
 * to the list without `proposal`. Who may review is decided there, when the page is opened.
 */
export const loginEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const query = new URL((yield* HttpServerRequest.HttpServerRequest).url, settings.origin).searchParams
    const roles = query.getAll("role")
    if (roles.length !== 1 || roles[0] !== "security") {
      return messagePage("Unknown sign-in", "This sign-in is for security reviewers: role=security.", 400)
    }
    const proposals = query.getAll("proposal")
    if (proposals.length > 1 || (proposals.length === 1 && !PROPOSAL_ID.test(proposals[0]!))) {
      return messagePage("Unknown proposal", "The link names no valid configuration change.", 400)
    }
    const target = proposals.length === 1 ? proposalPath(proposals[0]!) : reviewPaths.list
    if (Option.isSome(yield* currentSignIn(settings))) return seeOther(target)
    return seeOther(`/sso?next=${encodeURIComponent(target)}`)
  })
).pipe(Effect.withSpan("configReview.loginEndpoint"))

/** `GET /auth/reviews`: the proposals waiting for review. */
export const listEndpoint = answerPage(
  Effect.gen(function* () {
    const { signedIn, facts } = yield* gather("view", reviewPaths.list, undefined, undefined)
    yield* refuse(facts, undefined)
    const pending = yield* (yield* changes).list({ state: "pending_approval" })
    return listPage(signedIn!.user.display_name, pending, signedIn!.user.id)
  })
).pipe(Effect.withSpan("configReview.listEndpoint"))

const notices: Readonly<Record<string, string>> = {
  approve: "You approved this change.",
  reject: "You rejected this change.",
  "step-up": "Your identity provider confirmed you: you can approve now."
}

/** `GET /auth/reviews/{id}`: the proposal's diff, its state or outcome, and what this reviewer may do. */
export const proposalEndpoint = answerPage(
  Effect.gen(function* () {
    const id = yield* proposalIdParam
    const { settings, signedIn, facts } = yield* gather("view", proposalPath(id), undefined, id)
    const detail = yield* reviewable(facts, id)
    const csrf = configReviewCsrfOf(signedIn!.token)
    // What the buttons would meet: the same checks, as for a post of this page's own form.
    const asPosted = (action: ReviewAction) =>
      reviewRefusal({ ...facts, action, ownOrigin: true, csrf: true, proposal: detail })
    const approveRefusal = asPosted("approve")
    const rejectRefusal = asPosted("reject")
    let stepUpUrl: string | undefined
    let blocked = approveRefusal?.message
    if (approveRefusal?.reason === "step_up_required") {
      const connection = yield* (yield* UpstreamSignIn).current
      if (connection?.protocol === "oidc" && signedIn!.user.namespace === connection.namespace) {
        stepUpUrl = `${proposalPath(id)}/step-up?csrf=${csrf}`
        blocked = undefined
      } else {
        blocked = `${approveRefusal.message} A local, LDAP or OAuth2 sign-in cannot provide it.`
      }
    }
    const done = new URL((yield* HttpServerRequest.HttpServerRequest).url, settings.origin).searchParams.get("done")
    return proposalPage(
      detail,
      {
        csrf,
        approve: approveRefusal === undefined,
        stepUpUrl,
        blocked,
        reject: rejectRefusal === undefined
      },
      done !== null && Object.hasOwn(notices, done) ? notices[done] : undefined
    )
  })
).pipe(Effect.withSpan("configReview.proposalEndpoint"))

/**
 * A posted decision: the pipeline for `action` with the form's anti-CSRF token, then the service.
 * `ConfigChanges` refuses self-review again; a proposal no longer waiting, or one whose application
 * failed, is a page saying so.
 */
const decide = (action: "approve" | "reject") =>
  answerPage(
    Effect.gen(function* () {
      const id = yield* proposalIdParam
      const form = yield* readPageForm
      const { signedIn, facts } = yield* gather(action, proposalPath(id), { csrf: form }, id)
      yield* reviewable(facts, id)
      const reviewer = personOf(signedIn!)
      const service = yield* changes
      const outcome = yield* Effect.either(
        action === "approve" ? service.approve(id, reviewer) : service.reject(id, reviewer)
      )
      if (outcome._tag === "Right") return seeOther(`${proposalPath(id)}?done=${action}`)
      const error = outcome.left
      switch (error._tag) {
        case "ProposalNotPending":
          return messagePage(
            "Not done",
            `This change is no longer waiting for review (${error.state}). Nothing was changed.`,
            409
          )
        case "SelfReview":
          yield* logRefusal("self_review", action, id, reviewer.user_id)
          return messagePage("Not allowed", "You proposed this change: another security reviewer must decide it.", 403)
        case "ProposalApplicationFailed":
          return messagePage(
            "Application failed",
            `${error.message} Nothing was changed; a fresh proposal is needed.`,
            409
          )
      }
    })
  )

/** `POST /auth/reviews/{id}/approve` */
export const approveEndpoint = decide("approve").pipe(Effect.withSpan("configReview.approveEndpoint"))
/** `POST /auth/reviews/{id}/reject` */
export const rejectEndpoint = decide("reject").pipe(Effect.withSpan("configReview.rejectEndpoint"))

/**
 * `GET /auth/reviews/{id}/step-up?csrf=…`: with `require_step_up`, a reviewer signs in again at the
 * OpenID Connect provider for this proposal (`prompt=login`, `max_age`, `acr_values` of `approvals.step_up`),
 * exactly as for a write approval; the callback records the evidence for this proposal in this sign-in.
 */
export const stepUpEndpoint = answerPage(
  Effect.gen(function* () {
    const id = yield* proposalIdParam
    const settings = yield* authSettings
    const query = new URL((yield* HttpServerRequest.HttpServerRequest).url, settings.origin).searchParams
    const { signedIn, facts } = yield* gather("step_up", proposalPath(id), { csrf: OAuthParams.fromSearch(query) }, id)
    yield* reviewable(facts, id)
    return yield* startStepUp(settings, signedIn!, { approvalId: id, for: "config_change" })
  })
).pipe(Effect.withSpan("configReview.stepUpEndpoint"))
