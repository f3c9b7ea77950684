import { Context, Effect, Layer } from "effect"
import { BearerVerifier } from "../bearer/verifier.js"
import { Backends } from "../mcp/upstream/backends.js"
import { StoreHealth } from "../store/health.js"

/** The fields of the readiness document `/readyz` answers (docs/operations.md, "Probes"). */
export interface ReadinessReport {
  readonly backends_ready: number
  readonly backends_total: number
  readonly required_ready: number
  readonly required_total: number
  readonly auth_verifier_ready: boolean
  readonly store_ready: boolean
}

export const isReady = (report: ReadinessReport): boolean =>
  report.auth_verifier_ready && report.store_ready && report.required_ready === report.required_total

/** Why a report is not ready, in fixed words (the `reasons` of `readiness.lost`). */
export const unreadyReasons = (report: ReadinessReport, storeReason?: string): ReadonlyArray<string> => [
  ...(report.store_ready ? [] : [`store unavailable${storeReason === undefined ? "" : ` (${storeReason})`}`]),
  ...(report.auth_verifier_ready ? [] : ["token verifier not ready"]),
  ...(report.required_ready === report.required_total
    ? []
    : [`required backends ready: ${report.required_ready} of ${report.required_total}`])
]

/** Answers /readyz for one generation. */
export class Readiness extends Context.Tag("gateway/Readiness")<
  Readiness,
  { readonly report: Effect.Effect<ReadinessReport> }
>() {}

/**
 * Readiness of a generation: its backends (a backend serving an inherited catalog is not ready:
 * docs/mcp.md, "Backends"), its token verifier (external JWKS loaded, or the Signer's key present) and
 * the store (src/store/health.ts: no query per probe). The answers themselves are not logged — a probe
 * asks every few seconds — but each change is: `readiness.lost` with the reasons when a report is not
 * ready after one that was (or the first one), `readiness.restored` when it is ready again.
 */
export const ReadinessLive = Layer.effect(
  Readiness,
  Effect.gen(function* () {
    const { slots } = yield* Backends
    const verifier = yield* BearerVerifier
    const store = yield* StoreHealth
    let wasReady = true
    const logChange = (report: ReadinessReport) =>
      Effect.suspend(() => {
        const ready = isReady(report)
        if (ready === wasReady) return Effect.void
        wasReady = ready
        return ready
          ? Effect.logInfo("readiness.restored").pipe(Effect.annotateLogs({ event: "readiness.restored" }))
          : Effect.logWarning("readiness.lost").pipe(
              Effect.annotateLogs({ event: "readiness.lost", reasons: unreadyReasons(report, store.reason()) })
            )
      })
    return {
      report: Effect.map(verifier.ready, (verifierReady): ReadinessReport => {
        const ready = slots.filter((slot) => slot.status === "ready")
        return {
          backends_ready: ready.length,
          backends_total: slots.length,
          required_ready: ready.filter((slot) => slot.config.required).length,
          required_total: slots.filter((slot) => slot.config.required).length,
          auth_verifier_ready: verifierReady,
          store_ready: store.ready()
        }
      }).pipe(Effect.tap(logChange))
    }
  })
)
