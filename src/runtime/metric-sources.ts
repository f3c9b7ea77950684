import { type Context, Duration, Effect } from "effect"
import { ArchiveDelivery } from "../events/delivery-status.js"
import { Notifier } from "../events/notifier.js"
import type { BackendSlot } from "../mcp/upstream/slot.js"
import type { BackendState, MetricSources, OutboxState } from "../observability/metrics.js"
import type { BaseServices } from "./generation-layer.js"
import type { Generations } from "./generations.js"

/** A scrape waits this long for the outbox figures (a store query each), then goes on without them. */
const OUTBOX_TIMEOUT = Duration.seconds(2)

export const backendStates = (slots: ReadonlyArray<BackendSlot>, now: number): ReadonlyArray<BackendState> =>
  slots.map((slot) => ({
    id: slot.config.id,
    status: slot.status,
    catalogAgeSeconds: slot.catalogAt === undefined ? undefined : Math.max(0, (now - slot.catalogAt) / 1000)
  }))

/**
 * What `/metrics` reads of the live state at each scrape: the current generation (its id, its backends),
 * how many replaced ones still drain, and both delivery queues' figures (src/events/delivery-status.ts).
 */
export const metricSources = (base: Context.Context<BaseServices>, generations: Generations): MetricSources => ({
  generation: () => {
    const current = generations.current()
    return { id: current.id, draining: generations.draining(), backends: backendStates(current.slots, Date.now()) }
  },
  outboxes: () =>
    Effect.runPromise(
      Effect.all({
        webhook: Effect.flatMap(Notifier, (n) => n.report),
        archive: Effect.flatMap(ArchiveDelivery, (a) => a.report)
      }).pipe(
        Effect.map(
          ({ webhook, archive }): ReadonlyArray<OutboxState> => [
            {
              queue: "webhook",
              enabled: webhook.enabled,
              pending: webhook.pending,
              failed: webhook.failed,
              oldestAgeSeconds: webhook.oldest_pending_age_seconds
            },
            {
              queue: "archive",
              enabled: archive.enabled,
              pending: archive.pending,
              failed: archive.failed,
              oldestAgeSeconds: archive.oldest_pending_age_seconds
            }
          ]
        ),
        Effect.timeoutTo({ duration: OUTBOX_TIMEOUT, onTimeout: () => [], onSuccess: (states) => states }),
        Effect.catchAllCause(() => Effect.succeed([])),
        Effect.provide(base)
      )
    )
})
