import { Clock, Effect, Layer, Redacted } from "effect"
import { clientAddressUnder } from "../auth/client-address.js"
import { BearerVerifier } from "../bearer/verifier.js"
import { Config } from "../config/service.js"
import { SecurityLog } from "../events/security-log.js"
import { AccessState } from "../policy/access-state.js"
import { effectiveScopes } from "../policy/view.js"
import { AdminAuth } from "./api.js"
import { apiError } from "./errors.js"
import { adminResource, adminResourceMetadata } from "./resource.js"

/**
 * Authentication of the Management API (docs/management-api.md): a gateway-issued access token whose
 * audience is the admin resource (the same verification as /mcp: signature, issuer, expiry, a live
 * session), held by an active user who — now, not only when the token was issued — holds every scope of
 * `admin.required_scopes` through the `admin` role of a permission group.
 */
export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function* () {
    const { config } = yield* Config
    const verifier = yield* BearerVerifier
    const state = yield* AccessState
    const verify = verifier.forResource(adminResource(config), adminResourceMetadata(config))
    const required = config.admin.required_scopes
    const securityLog = yield* SecurityLog
    return {
      bearer: (token) =>
        Effect.gen(function* () {
          const value = Redacted.value(token)
          const caller = yield* verify(value === "" ? undefined : `Bearer ${value}`).pipe(
            Effect.catchAll((refused) =>
              Effect.zipRight(
                refused.code === "invalid_token"
                  ? Effect.flatMap(clientAddressUnder(config), (address) =>
                      securityLog.tokenRejected(address, refused.description, { resource: "management_api" })
                    )
                  : Effect.void,
                apiError(401, refused.code, refused.description)
              )
            )
          )
          const grant = yield* state.grantFor(caller)
          if (grant === undefined || !grant.active) {
            return yield* apiError(403, "forbidden", "The token's user is not an enabled administrator.")
          }
          const now = yield* Clock.currentTimeMillis
          if (grant.staleAt !== undefined && now >= grant.staleAt) {
            return yield* apiError(403, "forbidden", "The user's organization memberships must be confirmed again.")
          }
          const held = effectiveScopes(caller, grant)
          const missing = required.filter((scope) => !held.has(scope))
          if (missing.length > 0) {
            return yield* apiError(
              403,
              "insufficient_scope",
              `The token's user does not hold ${missing.join(" ")} now (the admin role of a permission group).`
            )
          }
          return { caller, userId: grant.user.id, kind: grant.user.kind }
        })
    }
  })
)
