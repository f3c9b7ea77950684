import { HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { finishStepUp } from "../../approvals/review/step-up-callback.js"
import { Config } from "../../config/service.js"
import { constantTimeEqual, sha256Hex } from "../../crypto/hashing.js"
import { SecurityLog } from "../../events/security-log.js"
import { ConnectionTests } from "../../identity/providers/connection-tests.js"
import { isBootstrapSubject } from "../../identity/upstream/bootstrap.js"
import type { UpstreamRefused } from "../../identity/upstream/flow.js"
import { UpstreamSignIn } from "../../identity/upstream/service.js"
import { PolicyWrites } from "../../policy/writes.js"
import { accountUsable } from "../account-access.js"
import { OAuthParams } from "../authorize/params.js"
import { addressBucket, clientAddress } from "../client-address.js"
import { readBrowserCookie } from "../cookies.js"
import { seeOther } from "../pages/html.js"
import { messagePage } from "../pages/message.js"
import { type LoginTransaction, PendingAuthorizations } from "../pending.js"
import { type AuthSettings, authSettings } from "../settings.js"
import { finishConnectionTest } from "./connection-test.js"
import { afterAuthentication, clientRedirect } from "./finish.js"
import { answerPage } from "./page-response.js"
import { page, queryOf, single } from "./query.js"
import { stagePage } from "./sign-in.js"
import { requireCsrf, requireSameOrigin, requireTransaction } from "./transaction.js"

/**
 * The security log line of a refused enterprise sign-in (docs/operations.md, "Security events"): at
 * most 10 a minute per client address, since anyone can call `/sso/callback`.
 */
const refused = (
  transaction: LoginTransaction | undefined,
  reason: string,
  extra: Record<string, unknown> = {},
  provider: string | undefined = transaction?.upstream?.namespace
) =>
  Effect.gen(function* () {
    const address = yield* clientAddress
    yield* (yield* SecurityLog).limited(addressBucket(address), "auth.upstream_sign_in_refused", {
      reason,
      ...extra,
      provider: provider ?? null,
      client_address: address,
      client_id: transaction?.request?.clientId ?? null
    })
  })

/**
 * `GET /sso/login/upstream?login=…&csrf=…`: the "sign in with your organization" link of the sign-in
 * page. A link (not a form) so that the browser may follow the redirect to the provider, which a form's
 * CSP `form-action` would stop; it carries the transaction's anti-CSRF token like every form does.
 */
export const upstreamStartEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const upstream = yield* UpstreamSignIn
    const url = yield* queryOf
    const connection = yield* upstream.current
    if (connection === undefined) return yield* page("Not available", "Enterprise sign-in is not configured.", 404)
    yield* requireSameOrigin(settings)
    const transaction = yield* requireTransaction(settings, single(url, "login"))
    yield* requireCsrf(transaction.csrf, OAuthParams.fromSearch(url.searchParams))
    if (transaction.stage !== "sign_in" && transaction.stage !== "upstream") {
      return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
    }
    const started = yield* Effect.either(upstream.start(connection))
    if (started._tag === "Left") {
      yield* refused(transaction, started.left.reason, { detail: started.left.detail ?? null }, connection.namespace)
      return stagePage(
        settings,
        transaction,
        "The identity provider cannot be reached right now. Try again in a moment.",
        502
      )
    }
    yield* (yield* PendingAuthorizations).update({ ...transaction, stage: "upstream", upstream: started.right.attempt })
    return seeOther(started.right.url)
  })
).pipe(Effect.withSpan("upstreamStartEndpoint"))

/** A refused sign-in ends the transaction: the client hears `access_denied`, a portal sign-in sees a page. */
const endRefused = (settings: AuthSettings, transaction: LoginTransaction, error: UpstreamRefused) =>
  Effect.gen(function* () {
    yield* refused(transaction, error.reason, {
      ...(error.check === undefined ? {} : { check: error.check }),
      detail: error.detail ?? null
    })
    yield* (yield* PendingAuthorizations).finish(transaction.id)
    const text =
      error.reason === "upstream_error"
        ? "The identity provider did not sign you in."
        : "The identity provider's answer could not be accepted."
    return transaction.request === undefined
      ? messagePage("Sign-in failed", `${text} Start again from the application.`, 403)
      : clientRedirect(settings, transaction.request, { error: "access_denied", error_description: text })
  })

/**
 * `GET /sso/callback`: the upstream's fixed redirect. The `state` finds the sign-in (once: a replayed
 * callback finds nothing), which must belong to this browser; the upstream's answer is verified
 * (src/identity/upstream/flow.ts), the person is found or created (pending until an administrator
 * enables them), and the sign-in continues as for a local account — or ends with `access_denied`,
 * reason `account_access_required`, for a pending or disabled person.
 */
export const upstreamCallbackEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const upstream = yield* UpstreamSignIn
    const url = yield* queryOf
    const state = single(url, "state")
    if (state !== undefined && state.length <= 256) {
      const test = yield* (yield* ConnectionTests).takeByState(state)
      if (Option.isSome(test)) return yield* finishConnectionTest(test.value, url)
    }
    const connection = yield* upstream.current
    if (connection === undefined) return yield* page("Not available", "Enterprise sign-in is not configured.", 404)
    const found =
      state === undefined || state.length > 256
        ? Option.none<LoginTransaction>()
        : yield* (yield* PendingAuthorizations).takeByUpstreamState(state)
    // A sign-in started with a connection that has been replaced since does not complete with the new one.
    if (Option.isNone(found) || found.value.upstream?.namespace !== connection.namespace) {
      if (Option.isSome(found)) yield* (yield* PendingAuthorizations).finish(found.value.id)
      yield* refused(undefined, "state_unknown", {}, connection.namespace)
      return yield* page(
        "Sign-in expired",
        "This sign-in is unknown, was already completed, or is older than 5 minutes. Go back to the application and start again.",
        400
      )
    }
    const transaction = found.value
    const request = yield* HttpServerRequest.HttpServerRequest
    const browser = readBrowserCookie(settings, request.cookies)
    if (browser === undefined || !constantTimeEqual(sha256Hex(browser), transaction.browserBinding)) {
      yield* refused(transaction, "browser_mismatch")
      yield* (yield* PendingAuthorizations).finish(transaction.id)
      return yield* page(
        "Sign-in started elsewhere",
        "This sign-in was started in another browser. Start again here.",
        400
      )
    }
    const callback = new URL(`${settings.origin}/sso/callback${url.search}`)
    const verified = yield* Effect.either(upstream.complete(connection, callback, transaction.upstream!))
    if (verified._tag === "Left") return yield* endRefused(settings, transaction, verified.left)
    const identity = verified.right
    // The connection may have been replaced or disabled while the provider answered: nothing started
    // under it completes (docs/enterprise-sign-in.md, "Identity-provider settings").
    const still = yield* upstream.current
    if (still?.namespace !== connection.namespace || still.clientId !== connection.clientId) {
      yield* refused(transaction, "connection_replaced")
      yield* (yield* PendingAuthorizations).finish(transaction.id)
      return yield* page(
        "Sign-in expired",
        "The identity provider's settings changed during this sign-in. Start again.",
        400
      )
    }
    // A reviewer's step-up for one approval: evidence only, nobody is signed in or changed.
    if (transaction.stepUp !== undefined)
      return yield* finishStepUp(transaction, transaction.stepUp, connection, identity)
    const { config } = yield* Config
    const user = yield* (yield* PolicyWrites).admitEnterpriseUser(
      {
        namespace: connection.namespace,
        subject: identity.subject,
        name: identity.name,
        // A claimed group's name is its id at the provider (a directory snapshot may name it later).
        groups: identity.groups.map((name) => ({ externalId: name, name })),
        departments: identity.departments.map((name) => ({ externalId: name, name })),
        bootstrap: isBootstrapSubject(config, connection.namespace, identity.subject)
      },
      new Date(yield* Clock.currentTimeMillis)
    )
    // Pending, disabled or directory-inactive: logged here; afterAuthentication ends the sign-in.
    if (!accountUsable(user)) {
      yield* refused(transaction, "account_access_required", {
        user_id: user.id,
        status: user.directory_active ? user.status : "directory_inactive"
      })
    }
    return yield* afterAuthentication(settings, transaction, user.id, "upstream")
  })
).pipe(Effect.withSpan("upstreamCallbackEndpoint"))
