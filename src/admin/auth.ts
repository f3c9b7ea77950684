import { Clock, Effect, Layer, Redacted } from "effect"
import { clientAddressUnder } from "../auth/client-address.js"
import { BearerVerifier } from "../bearer/verifier.js"
import type { GatewayConfig } from "../config/schema.js"
import { Config } from "../config/service.js"
import { SecurityLog } from "../events/security-log.js"
import { AccessState } from "../policy/access-state.js"
import { roleScopesOf } from "../policy/roles.js"
import { effectiveScopes } from "../policy/view.js"
import { AdminAuth, DeliveryAuth } from "./api.js"
import { apiError } from "./errors.js"
import { adminResource, adminResourceMetadata } from "./resource.js"

/**
 * Authentication of the Management API (docs/management-api.md): a gateway-issued access token whose
 * audience is the admin resource (the same verification as /mcp: signature, issuer, expiry, a live
 * session), held by an active user who — now, not only when the token was issued — holds every scope of
 * `admin.required_scopes` through the `admin` role of a permission group.
 */
/**
 * The bearer check both middlewares share: `allowed` says which scope sets admit the caller (all of
 * one of them, held now); `roleText` names them in the refusal.
 */
const bearerCheck = (allowed: (config: GatewayConfig) => ReadonlyArray<ReadonlyArray<string>>, roleText: string) =>
  Effect.gen(function* () {
    const { config } = yield* Config
    const verifier = yield* BearerVerifier
    const state = yield* AccessState
    const verify = verifier.forResource(adminResource(config), adminResourceMetadata(config))
    const sets = allowed(config)
    const securityLog = yield* SecurityLog
    return {
      bearer: (token: Redacted.Redacted<string>) =>
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
          if (!sets.some((required) => required.every((scope) => held.has(scope)))) {
            const missing = sets[0]!.filter((scope) => !held.has(scope))
            return yield* apiError(
              403,
              "insufficient_scope",
              sets.length === 1
                ? `The token's user does not hold ${missing.join(" ")} now (${roleText}).`
                : `The token's user does not hold the scopes of ${roleText} now.`
            )
          }
          return { caller, userId: grant.user.id, kind: grant.user.kind }
        })
    }
  })

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  bearerCheck((config) => [config.admin.required_scopes], "the admin role of a permission group")
)

/** The `admin` or the `security_reviewer` role (docs/access-policy.md, "Roles"). */
export const DeliveryAuthLive = Layer.effect(
  DeliveryAuth,
  bearerCheck((config) => {
    const roles = roleScopesOf(config)
    return [roles.get("admin") ?? [], roles.get("security_reviewer") ?? []].filter((scopes) => scopes.length > 0)
  }, "the admin or security_reviewer role of a permission group")
)
