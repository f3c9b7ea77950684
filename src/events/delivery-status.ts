import { Context, Effect, Layer } from "effect"
import type { GatewayConfig } from "../config/schema.js"

/**
 * One delivery queue's figures for `GET /api/v1/approvals/delivery` (docs/management-api.md). Counts
 * are what the queue holds now; a queue that is not configured reports `enabled: false` and nothing
 * pending.
 */
export interface DeliveryReport {
  readonly enabled: boolean
  /** Events committed and not yet acknowledged by the receiver. */
  readonly pending: number
  /** Of those, events whose delivery failed at least once and is waiting for a retry. */
  readonly failed: number
  /** Seconds since the oldest pending event happened; null when nothing is pending. */
  readonly oldest_pending_age_seconds: number | null
  /** The class of the last failure of a pending event (`timeout`, `tls`, `http_503`, …); null when none. */
  readonly last_error: string | null
}

/**
 * The audit archive's contribution to the delivery status. The archive service provides its own
 * layer; until it exists, `archiveFromConfiguration` says whether it is configured and reports no
 * counts (null), never invented ones.
 */
export class ArchiveDelivery extends Context.Tag("gateway/ArchiveDelivery")<
  ArchiveDelivery,
  {
    readonly report: Effect.Effect<
      Omit<DeliveryReport, "pending" | "failed"> & { readonly pending: number | null; readonly failed: number | null }
    >
  }
>() {}

export const archiveFromConfiguration = (config: GatewayConfig) =>
  Layer.succeed(ArchiveDelivery, {
    report: Effect.succeed({
      enabled: config.admin.approvals.audit_archive !== undefined,
      pending: null,
      failed: null,
      oldest_pending_age_seconds: null,
      last_error: null
    })
  })
