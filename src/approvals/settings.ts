import { Duration } from "effect"
import type { GatewayConfig } from "../config/schema.js"

/** The `approvals` settings as the service uses them (ms); read from each generation's configuration. */
export interface ApprovalSettings {
  /** How long a request waits for its reviewers before it expires. */
  readonly expiresAfterMs: number
  /** How long an approved write may be resumed, counted from the vote that reached the quorum. */
  readonly executeWithinMs: number
  /** How long a finished approval keeps its details before only its tombstone remains. */
  readonly retentionMs: number
  /** The `acr` values a reviewer's step-up must assert (one of them). */
  readonly stepUpAcrValues: ReadonlyArray<string>
  /** How fresh a reviewer's step-up authentication must be. */
  readonly stepUpMaxAgeMs: number
}

export const approvalSettingsOf = (config: GatewayConfig): ApprovalSettings => ({
  expiresAfterMs: Duration.toMillis(config.approvals.expires_after),
  executeWithinMs: Duration.toMillis(config.approvals.execute_within),
  retentionMs: Duration.toMillis(config.approvals.retention),
  stepUpAcrValues: config.approvals.step_up.acr_values,
  stepUpMaxAgeMs: Duration.toMillis(config.approvals.step_up.max_age)
})

/** At most this many approvals are active (pending, approved or executing) per issuer and subject. */
export const MAX_ACTIVE_PER_SUBJECT = 20

/** The largest intent (normalized arguments and metadata, as JSON) an approval is opened for: what a reviewer can read. */
export const MAX_INTENT_BYTES = 64 * 1024

/** An open approval whose deadline is this close gets its one `reminder` event (the minute tick writes it). */
export const REMINDER_WINDOW_MS = 5 * 60_000
