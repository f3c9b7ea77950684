import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ArchiveDelivery } from "../events/delivery-status.js"
import { Notifier } from "../events/notifier.js"
import { ManagementApi } from "./api.js"

/**
 * `GET /api/v1/approvals/delivery` (docs/management-api.md): each queue reports its own figures — the
 * notifier from its store, the archive through its `ArchiveDelivery` contribution.
 */
export const ApprovalDeliveryLive = HttpApiBuilder.group(ManagementApi, "approvalDelivery", (handlers) =>
  Effect.gen(function* () {
    const notifier = yield* Notifier
    const archive = yield* ArchiveDelivery
    return handlers.handle("delivery", () =>
      Effect.all({ notifications: notifier.report, archive: archive.report }).pipe(
        Effect.withSpan("ApprovalDelivery.delivery")
      )
    )
  })
)
