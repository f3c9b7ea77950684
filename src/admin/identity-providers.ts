import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Config } from "../config/service.js"
import { IdentityProviders } from "../identity/providers/service.js"
import { IdentityProvidersBody } from "../identity/providers/settings.js"
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
    return handlers
      .handle("read", () => providers.record)
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
