import { Clock, Context, Effect, Layer } from "effect"
import type { Caller } from "../bearer/caller.js"
import { insufficientScope, invalidToken } from "../bearer/challenges.js"
import { metadataUrl } from "../bearer/resource-metadata.js"
import { Config } from "../config/service.js"
import type { HttpError } from "../http/error-body.js"
import { AccessState } from "./access-state.js"
import { type CallDecision, decideCall } from "./decide.js"
import { endpointsOf, GatewayToolRules, type PolicyTool } from "./tool.js"
import { effectiveScopes, endpointAccess, isOpen, View } from "./view.js"

/**
 * The one place that decides who sees and calls what on /mcp (docs/access-policy.md). Per request it
 * builds the caller's View once — or answers 401/403 for the whole request — and it decides every
 * `tools/call` (`decide`, a pipeline of named checks). A generation service: it reads this
 * generation's endpoints (backends, HTTP endpoints, tool groups: `endpointsOf`); the stored policy
 * itself is the process-wide AccessState.
 */
export class PolicyEngine extends Context.Tag("gateway/PolicyEngine")<
  PolicyEngine,
  {
    readonly view: (caller: Caller) => Effect.Effect<View, HttpError>
    /** The view `view` would give, when it is built and current at `nowMillis`; undefined means "ask `view`". */
    readonly viewNow: (caller: Caller, nowMillis: number) => View | undefined
    readonly decide: (view: View, tool: PolicyTool, args: Record<string, unknown> | undefined) => CallDecision
    /** Runs `listener` after every policy change (in-flight work re-checks itself); returns the unsubscribe. */
    readonly onChange: (listener: () => void) => () => void
  }
>() {}

export const PolicyEngineLive = Layer.effect(
  PolicyEngine,
  Effect.gen(function* () {
    const loaded = yield* Config
    const { config } = loaded
    const state = yield* AccessState
    const gatewayTools = yield* GatewayToolRules
    const endpoints = endpointsOf(loaded)
    const challengeUrl = metadataUrl(config.server.public_url)
    const inactive = invalidToken(challengeUrl, "The account is not enabled.")
    const stale = invalidToken(
      challengeUrl,
      "The account's organization memberships must be confirmed again: sign in again."
    )
    const everyRequiredScope = [...new Set(endpoints.flatMap((endpoint) => endpoint.required_scopes))].sort()
    const lacksScopes = insufficientScope(challengeUrl, everyRequiredScope)
    // A verified token's Caller is one object while the token is cached, so its view is built once per change.
    const views = new WeakMap<Caller, View>()

    const build = (caller: Caller, now: number) => {
      // Read before the grant: a change landing during its load makes this view stale at once.
      const epoch = state.epoch()
      return Effect.flatMap(state.grantFor(caller), (grant): Effect.Effect<View, HttpError> => {
        if (grant !== undefined && !grant.active) return Effect.fail(inactive)
        if (grant?.staleAt !== undefined && now >= grant.staleAt) return Effect.fail(stale)
        const scopes = effectiveScopes(caller, grant)
        // A token that opens no endpoint while scopes would open some is refused up front (docs/access-policy.md).
        if (endpoints.length > 0 && !endpoints.some((endpoint) => isOpen(endpoint, scopes))) {
          return Effect.fail(lacksScopes)
        }
        const view = new View(
          caller,
          grant,
          endpointAccess(endpoints, grant, scopes),
          epoch,
          grant?.staleAt ?? Number.POSITIVE_INFINITY,
          gatewayTools
        )
        views.set(caller, view)
        return Effect.succeed(view)
      })
    }

    // Built since the last policy change, and not past the time its memberships must be confirmed again.
    const viewNow = (caller: Caller, now: number): View | undefined => {
      const cached = views.get(caller)
      return cached !== undefined && cached.epoch === state.epoch() && now < cached.validUntil ? cached : undefined
    }

    return {
      view: (caller) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const cached = viewNow(caller, now)
          return cached === undefined ? build(caller, now) : Effect.succeed(cached)
        }),
      viewNow,
      decide: (view, tool, args) => decideCall({ view, tool, arguments: args }),
      onChange: state.onChange
    }
  })
)
