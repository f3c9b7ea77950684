import { Clock, Effect, Layer, Redacted } from "effect"
import { clientAddressUnder } from "../auth/client-address.js"
import { BearerVerifier } from "../bearer/verifier.js"
import type { GatewayConfig } from "../config/schema.js"
import { Config } from "../config/service.js"
import { SecurityLog } from "../events/security-log.js"
import type { ErrorCode } from "../http/error-codes.js"
import { AccessState } from "../policy/access-state.js"
import { roleScopesOf } from "../policy/roles.js"
import { effectiveScopes } from "../policy/view.js"
import { AdminAuth, type AdminCaller, DeliveryAuth } from "./api.js"
import { apiError } from "./errors.js"
import { adminResource, adminResourceMetadata } from "./resource.js"

/** Why an administrator's token was refused: 401 (no valid token or session) or 403 (not an administrator now). */
export interface AdminRefusal {
  readonly status: 401 | 403
  readonly code: ErrorCode
  readonly description: string
}

const refuse = (status: 401 | 403, code: ErrorCode, description: string) =>
  Effect.fail<AdminRefusal>({ status, code, description })

/**
 * Authentication of the Management API and the console (docs/management-api.md, docs/console.md): a
 * gateway-issued access token whose audience is the admin resource (the same verification as /mcp:
 * signature, issuer, expiry, a live session), held by an active user who — now, not only when the token
 * was issued — holds every scope of one of the `allowed` scope sets through a role of a permission group.
 * `roleText` names them in the refusal. The Management API's middlewares and the console's every request
 * call the function this returns; neither derives the decision itself.
 */
export const adminTokenCheck = (
  allowed: (config: GatewayConfig) => ReadonlyArray<ReadonlyArray<string>>,
  roleText: string
) =>
  Effect.gen(function* () {
    const { config } = yield* Config
    const verifier = yield* BearerVerifier
    const state = yield* AccessState
    const verify = verifier.forResource(adminResource(config), adminResourceMetadata(config))
    const sets = allowed(config)
    const securityLog = yield* SecurityLog
    return (token: string) =>
      Effect.gen(function* () {
        const caller = yield* verify(token === "" ? undefined : `Bearer ${token}`).pipe(
          Effect.catchAll((refused) =>
            Effect.zipRight(
              refused.code === "invalid_token"
                ? Effect.flatMap(clientAddressUnder(config), (address) =>
                    securityLog.tokenRejected(address, refused.description, { resource: "management_api" })
                  )
                : Effect.void,
              refuse(401, refused.code, refused.description)
            )
          )
        )
        const grant = yield* state.grantFor(caller)
        if (grant === undefined || !grant.active) {
          return yield* refuse(403, "forbidden", "The token's user is not an enabled administrator.")
        }
        const now = yield* Clock.currentTimeMillis
        if (grant.staleAt !== undefined && now >= grant.staleAt) {
          return yield* refuse(403, "forbidden", "The user's organization memberships must be confirmed again.")
        }
        const held = effectiveScopes(caller, grant)
        if (!sets.some((required) => required.every((scope) => held.has(scope)))) {
          const missing = sets[0]!.filter((scope) => !held.has(scope))
          return yield* refuse(
            403,
            "insufficient_scope",
            sets.length === 1
              ? `The token's user does not hold ${missing.join(" ")} now (${roleText}).`
              : `The token's user does not hold the scopes of ${roleText} now.`
          )
        }
        return { caller, userId: grant.user.id, kind: grant.user.kind } satisfies typeof AdminCaller.Service
      })
  })

/** The check of the Management API's administrative endpoints and of the console: `admin.required_scopes`. */
export const adminCheck = adminTokenCheck(
  (config) => [config.admin.required_scopes],
  "the admin role of a permission group"
)

/** The bearer middleware over a check: its refusals become the API's error bodies. */
const bearerMiddleware = <A, R, RA>(
  check: Effect.Effect<(token: string) => Effect.Effect<A, AdminRefusal, RA>, never, R>
) =>
  Effect.map(check, (authorize) => ({
    bearer: (token: Redacted.Redacted<string>) =>
      authorize(Redacted.value(token)).pipe(
        Effect.catchAll((refused) => apiError(refused.status, refused.code, refused.description))
      )
  }))

export const AdminAuthLive = Layer.effect(AdminAuth, bearerMiddleware(adminCheck))

/** The `admin` or the `security_reviewer` role (docs/access-policy.md, "Roles"). */
export const DeliveryAuthLive = Layer.effect(
  DeliveryAuth,
  bearerMiddleware(
    adminTokenCheck((config) => {
      const roles = roleScopesOf(config)
      return [roles.get("admin") ?? [], roles.get("security_reviewer") ?? []].filter((scopes) => scopes.length > 0)
    }, "the admin or security_reviewer role of a permission group")
  )
)
