import { HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Layer, type Redacted } from "effect"
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
 * call the function this returns with an `Authorization` value (the console: its session's token); neither
 * derives the decision itself, and both read the header with /mcp's parser (RFC 6750 §2.1: `Bearer`, spaces,
 * the token), so a header one listener refuses the other refuses too.
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
    return (authorization: string | undefined) =>
      Effect.gen(function* () {
        const caller = yield* verify(authorization).pipe(
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

/**
 * The bearer middleware over a check: its refusals become the API's error bodies. The token the
 * platform's bearer security hands over is not used: it is the header with its first seven characters
 * cut off whatever they were (`Bearer<TAB>…`, `Basic  …` would pass), so the check reads the header itself.
 */
const bearerMiddleware = <A, R, RA>(
  check: Effect.Effect<(authorization: string | undefined) => Effect.Effect<A, AdminRefusal, RA>, never, R>
) =>
  Effect.map(check, (authorize) => ({
    bearer: (_token: Redacted.Redacted<string>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        authorize(request.headers["authorization"])
      ).pipe(Effect.catchAll((refused) => apiError(refused.status, refused.code, refused.description)))
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
