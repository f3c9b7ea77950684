import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { ArchiveDelivery } from "../events/delivery-status.js"
import { Notifier } from "../events/notifier.js"
import { Backends } from "../mcp/upstream/backends.js"
import { Tracing } from "../observability/tracing.js"
import { isReady, Readiness } from "../runtime/readiness.js"
import { StoreHealth } from "../store/health.js"
import { version } from "../version.js"
import { ManagementApi } from "./api.js"

/** The id of the generation whose Management API answers (each generation builds its own). */
export class GenerationId extends Context.Tag("gateway/GenerationId")<GenerationId, number>() {}

export const generationIdLayer = (id: number) => Layer.succeed(GenerationId, id)

/** The store's latency is one query, timed; one that takes longer than this is reported as null. */
const STORE_PROBE_TIMEOUT = Duration.seconds(2)

/**
 * `GET /api/v1/status` (docs/management-api.md, "Status"): what an operator reads to see why calls are
 * slow or refused — each backend's state, last error class and catalog age, the generation, both delivery
 * queues, the store (its outage state and one query timed now) and whether traces are exported. Errors are
 * classes in fixed words, never a backend's message. The console's overview (src/admin/console/home.ts)
 * shows the same report.
 */
export const makeStatusReport = Effect.gen(function* () {
  const backends = yield* Backends
  const notifier = yield* Notifier
  const archive = yield* ArchiveDelivery
  const readiness = yield* Readiness
  const store = yield* StoreHealth
  const sql = yield* SqlClient.SqlClient
  const generation = yield* GenerationId
  const { tracer } = yield* Tracing
  const storeLatency = Effect.gen(function* () {
    const started = performance.now()
    const answered = yield* sql`SELECT 1`.pipe(
      Effect.timeoutOption(STORE_PROBE_TIMEOUT),
      Effect.orElseSucceed(() => Option.none())
    )
    return Option.isSome(answered) ? Math.round((performance.now() - started) * 100) / 100 : null
  })
  return Effect.gen(function* () {
    // The generation's clock, which stamped the catalogs (a TestClock in tests).
    const now = yield* Clock.currentTimeMillis
    const [report, outboxes, latency] = yield* Effect.all(
      [readiness.report, Effect.all({ notifications: notifier.report, archive: archive.report }), storeLatency],
      { concurrency: "unbounded" }
    )
    return {
      version,
      generation: { id: generation },
      ready: isReady(report),
      backends: backends.slots.map((slot) => ({
        id: slot.config.id,
        required: slot.config.required,
        state: slot.status,
        last_error: slot.lastError ?? null,
        tools: slot.catalog === undefined ? null : slot.catalog.tools.length,
        catalog_age_seconds:
          slot.catalogAt === undefined ? null : Math.max(0, Math.round((now - slot.catalogAt) / 100) / 10),
        inherited_catalog: slot.inherited
      })),
      outboxes,
      store: { ready: store.ready(), reason: store.reason() ?? null, latency_ms: latency },
      tracing: { enabled: tracer !== undefined }
    }
  }).pipe(Effect.withSpan("Status.status"))
})

/** The status report, as `GET /api/v1/status` answers it and the console's overview shows it. */
export type StatusReport = Effect.Effect.Success<Effect.Effect.Success<typeof makeStatusReport>>

export const StatusLive = HttpApiBuilder.group(ManagementApi, "status", (handlers) =>
  Effect.map(makeStatusReport, (report) => handlers.handle("status", () => report))
)
