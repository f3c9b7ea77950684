import { Duration, Effect, Layer, Schedule } from "effect"
import type { GatewayConfig } from "../config/schema.js"
import { StoreHealth } from "../store/health.js"
import { Approvals } from "./service.js"
import { approvalSettingsOf } from "./settings.js"

/** How often due approvals are expired and finished ones past retention become tombstones. */
export const APPROVAL_TICK = Duration.minutes(1)

/**
 * At start, executions a stop cut short become `unknown` (never replayed); then, every minute, due
 * approvals expire (each with its `approval.expired` event) and finished ones older than
 * `approvals.retention` are reduced to tombstones. Reads expire a due approval themselves too, so a
 * caller never sees one past its deadline as pending or approved. Uses the settings the process started
 * with; each approval keeps the deadlines it was given.
 */
export const ApprovalMaintenance = (config: GatewayConfig) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const approvals = yield* Approvals
      const health = yield* StoreHealth
      const settings = approvalSettingsOf(config)
      yield* approvals.recover()
      const sweep = approvals.sweep(settings).pipe(
        Effect.catchAllCause((cause) =>
          health.failedOr(cause, Effect.logWarning("approval maintenance failed", cause))
        ),
        Effect.withSpan("ApprovalMaintenance.sweep")
      )
      yield* Effect.forkScoped(Effect.schedule(sweep, Schedule.spaced(APPROVAL_TICK)))
    })
  )
