import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { errorResponse, HttpError } from "../http/error-body.js"
import { type ProviderRefused, probeDraft, replaceSettings, testDraft } from "../identity/providers/actions.js"
import { ConnectionTests, testRecord } from "../identity/providers/connection-tests.js"
import { ConnectionDraftBody } from "../identity/providers/draft.js"
import { IdentityProviders } from "../identity/providers/service.js"
import { IdentityProvidersBody } from "../identity/providers/settings.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { decodeBody, ifMatchRevision, readJsonObject } from "./body.js"
import { apiError, requestId } from "./errors.js"

/**
 * A refusal as the API's error. A 429 carries `Retry-After` (RFC 9110 §10.2.3) beside the wait its
 * description gives, so it is answered here rather than through the error schema, which has no headers.
 */
const answerRefusal = (refused: ProviderRefused) =>
  refused.retryAfter === undefined
    ? apiError(refused.status, refused.code, refused.message)
    : Effect.map(requestId, (id) =>
        errorResponse(
          new HttpError({
            status: refused.status,
            code: refused.code,
            description: refused.message,
            headers: { "retry-after": String(refused.retryAfter) }
          }),
          id
        )
      )

/**
 * The handlers of `/api/v1/identity-providers` (docs/enterprise-sign-in.md, "Identity-provider
 * settings"). A save replaces both connections whole, only at the revision the administrator read. What
 * each does is src/identity/providers/actions.ts, which the console's pages call too.
 */
export const IdentityProvidersLive = HttpApiBuilder.group(ManagementApi, "identityProviders", (handlers) =>
  Effect.gen(function* () {
    const providers = yield* IdentityProviders
    const tests = yield* ConnectionTests

    return handlers
      .handle("read", () => providers.record)
      .handleRaw("probe", ({ request }) =>
        Effect.gen(function* () {
          const draft = yield* decodeBody(ConnectionDraftBody, yield* readJsonObject(request))
          return yield* probeDraft(draft).pipe(Effect.catchTag("ProviderRefused", answerRefusal))
        })
      )
      .handleRaw("test", ({ request }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const draft = yield* decodeBody(ConnectionDraftBody, yield* readJsonObject(request))
          return yield* testDraft(admin.userId, draft).pipe(Effect.catchTag("ProviderRefused", answerRefusal))
        })
      )
      .handle("testResult", ({ path }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const found = yield* tests.resultFor(path.id, admin.userId, (yield* providers.current).revision)
          if (Option.isNone(found)) {
            return yield* apiError(
              404,
              "not_found",
              "No such connection test (they last 5 minutes, end on a save, and belong to who started them)."
            )
          }
          return testRecord(found.value)
        })
      )
      .handleRaw("replace", ({ request }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const revision = yield* ifMatchRevision(request)
          const body = yield* decodeBody(IdentityProvidersBody, yield* readJsonObject(request))
          return yield* replaceSettings(admin.userId, revision, body, yield* requestId).pipe(
            Effect.catchTag("ProviderRefused", answerRefusal)
          )
        })
      )
  })
)
