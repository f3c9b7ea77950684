import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Config } from "../config/service.js"
import { ConnectionTests, testRecord } from "../identity/providers/connection-tests.js"
import { ConnectionDraftBody, oidcDraftConnection } from "../identity/providers/draft.js"
import { IdentityProviders } from "../identity/providers/service.js"
import { IdentityProvidersBody } from "../identity/providers/settings.js"
import { probeConnection } from "../identity/upstream/flow.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { decodeBody, ifMatchRevision, readJsonObject } from "./body.js"
import { apiError, requestId } from "./errors.js"

/**
 * The handlers of `/api/v1/identity-providers` (docs/enterprise-sign-in.md, "Identity-provider
 * settings"). A save replaces both connections whole, only at the revision the administrator read.
 */
export const IdentityProvidersLive = HttpApiBuilder.group(ManagementApi, "identityProviders", (handlers) =>
  Effect.gen(function* () {
    const providers = yield* IdentityProviders
    const tests = yield* ConnectionTests

    /** The draft OIDC connection of a probe or test body, or a 400 naming what is missing. */
    const oidcDraft = (draft: ConnectionDraftBody) =>
      Effect.gen(function* () {
        if (draft.oidc === undefined)
          return yield* apiError(400, "invalid_request", 'oidc: required when source is "oidc"')
        const connection = oidcDraftConnection(draft.oidc, yield* providers.current)
        if (typeof connection === "string") return yield* apiError(400, "invalid_request", connection)
        return connection
      })

    const ldapNotYet = apiError(
      400,
      "invalid_request",
      'source: "ldap" probes and tests are not available in this version'
    )

    return handlers
      .handle("read", () => providers.record)
      .handleRaw("probe", ({ request }) =>
        Effect.gen(function* () {
          const draft = yield* decodeBody(ConnectionDraftBody, yield* readJsonObject(request))
          if (draft.source === "ldap") return yield* ldapNotYet
          const found = yield* Effect.either(probeConnection(yield* oidcDraft(draft)))
          if (found._tag === "Left") {
            return {
              source: "oidc" as const,
              reachable: false,
              reason: found.left.reason,
              ...(found.left.detail === undefined ? {} : { detail: found.left.detail })
            }
          }
          const { issuer, authorizationEndpoint, tokenEndpoint, signingKeys } = found.right
          return {
            source: "oidc" as const,
            reachable: true,
            issuer,
            ...(authorizationEndpoint === undefined ? {} : { authorization_endpoint: authorizationEndpoint }),
            ...(tokenEndpoint === undefined ? {} : { token_endpoint: tokenEndpoint }),
            signing_keys: signingKeys
          }
        })
      )
      .handleRaw("test", ({ request }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const draft = yield* decodeBody(ConnectionDraftBody, yield* readJsonObject(request))
          if (draft.source === "ldap") return yield* ldapNotYet
          const connection = yield* oidcDraft(draft)
          const test = yield* tests.open(admin.userId, (yield* providers.current).revision, connection)
          const { config } = yield* Config
          const start = new URL("/sso/login/test", new URL(config.auth.issuer).origin)
          start.searchParams.set("test", test.id)
          start.searchParams.set("token", test.startToken ?? "")
          return {
            id: test.id,
            source: "oidc" as const,
            status: "waiting" as const,
            start_url: start.toString(),
            expires_at: new Date(test.expiresAt).toISOString()
          }
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
          const { config } = yield* Config
          // One source per connection: the YAML's `auth.sso.upstream` is the OIDC connection there.
          if (body.oidc.enabled && config.auth.sso.upstream !== undefined) {
            return yield* apiError(
              409,
              "managed_in_configuration",
              "oidc.enabled: this gateway's identity provider is set in its configuration file (auth.sso.upstream); remove it there to manage the OIDC connection here."
            )
          }
          const outcome = yield* providers.save(admin.userId, revision, body, yield* requestId)
          switch (outcome._tag) {
            case "Invalid":
              return yield* apiError(400, "invalid_request", outcome.problems.join("; "))
            case "Stale":
              return yield* apiError(
                412,
                "precondition_failed",
                `The identity-provider settings changed since they were read: their revision is now "${outcome.revision}". Read them again.`
              )
            case "Saved":
              return outcome.record
          }
        })
      )
  })
)
