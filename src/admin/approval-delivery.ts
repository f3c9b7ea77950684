import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ArchiveDelivery } from "../events/delivery-status.js"
import { Notifier } from "../events/notifier.js"
import { ManagementApi } from "./api.js"

/**
 * How approval webhooks and the audit archive are keeping up: each queue reports its own figures — the
 * notifier from its store, the archive through its `ArchiveDelivery` contribution. The API's
 * `GET /api/v1/approvals/delivery` and the console's approvals page both read it here.
 */
export const deliveryStatus = Effect.gen(function* () {
  const notifier = yield* Notifier
  const archive = yield* ArchiveDelivery
  return yield* Effect.all({ notifications: notifier.report, archive: archive.report })
}).pipe(Effect.withSpan("ApprovalDelivery.delivery"))

/** `GET /api/v1/approvals/delivery` (docs/management-api.md). */
export const ApprovalDeliveryLive = HttpApiBuilder.group(ManagementApi, "approvalDelivery", (handlers) =>
  Effect.gen(function* () {
    const services = yield* Effect.context<Notifier | ArchiveDelivery>()
    return handlers.handle("delivery", () => Effect.provide(deliveryStatus, services))
  })
)
