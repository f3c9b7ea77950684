import { Effect, Option } from "effect"
import { type ConnectionTest, ConnectionTests } from "../../identity/providers/connection-tests.js"
import { IdentityProviders } from "../../identity/providers/service.js"
import type { UpstreamRefused } from "../../identity/upstream/flow.js"
import { UpstreamSignIn } from "../../identity/upstream/service.js"
import { seeOther } from "../pages/html.js"
import { messagePage } from "../pages/message.js"
import { authSettings } from "../settings.js"
import { answerPage } from "./page-response.js"
import { page, queryOf, single } from "./query.js"

/**
 * `GET /sso/login/test?test=…&token=…`: the one-use `start_url` of an OIDC connection test
 * (docs/enterprise-sign-in.md, "Trying a connection"): the draft connection's authorization request,
 * whose answer comes back to `/sso/callback` like a sign-in's. Nobody is signed in by it.
 */
export const connectionTestStartEndpoint = answerPage(
  Effect.gen(function* () {
    const url = yield* queryOf
    const tests = yield* ConnectionTests
    const id = single(url, "test")
    const token = single(url, "token")
    const found = id === undefined || token === undefined ? Option.none() : yield* tests.redeemStart(id, token)
    if (Option.isNone(found)) {
      return yield* page(
        "Test link used or expired",
        "This connection test link works once, for 5 minutes. Start a new test from the Management API.",
        400
      )
    }
    const test = found.value
    if (test.revision !== (yield* (yield* IdentityProviders).current).revision) {
      return yield* page(
        "Test ended",
        "The identity-provider settings were saved since this test started. Start a new test.",
        400
      )
    }
    const started = yield* Effect.either((yield* UpstreamSignIn).start(test.connection))
    if (started._tag === "Left") {
      yield* (yield* ConnectionTests).finish(test, failedResult(started.left))
      return messagePage(
        "Connection test failed",
        `The identity provider could not be used: ${started.left.reason}.`,
        502
      )
    }
    yield* tests.waitFor(test, started.right.attempt)
    return seeOther(started.right.url)
  })
).pipe(Effect.withSpan("connectionTestStartEndpoint"))

const failedResult = (error: UpstreamRefused) => ({
  status: "failed" as const,
  reason: error.reason,
  ...(error.check === undefined ? {} : { check: error.check }),
  ...(error.detail === undefined ? {} : { detail: error.detail })
})

/** The provider answered a connection test: verify it like a sign-in, keep the result, store nothing. */
export const finishConnectionTest = (test: ConnectionTest, url: URL) =>
  Effect.gen(function* () {
    const settings = yield* authSettings
    const tests = yield* ConnectionTests
    if (test.revision !== (yield* (yield* IdentityProviders).current).revision) {
      return messagePage("Test ended", "The identity-provider settings were saved since this test started.", 400)
    }
    const callback = new URL(`${settings.origin}/sso/callback${url.search}`)
    const verified = yield* Effect.either((yield* UpstreamSignIn).complete(test.connection, callback, test.attempt!))
    if (verified._tag === "Left") {
      yield* tests.finish(test, failedResult(verified.left))
      return messagePage(
        "Connection test failed",
        `The provider's answer was refused (${verified.left.reason}${verified.left.check === undefined ? "" : `: ${verified.left.check}`}). The result is in the Management API.`,
        200
      )
    }
    yield* tests.finish(test, { status: "succeeded", identity: verified.right })
    return messagePage(
      "Connection test succeeded",
      "The provider signed you in and its answer was verified. Nobody was signed in to the gateway; the result is in the Management API.",
      200
    )
  })
