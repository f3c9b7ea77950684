import { Context, Effect, Layer } from "effect"
import { BearerVerifier } from "../bearer/verifier.js"
import { Backends } from "../mcp/upstream/backends.js"

/** The fields of the readiness document `/readyz` answers (docs/operations.md, "Probes"). */
export interface ReadinessReport {
  readonly backends_ready: number
  readonly backends_total: number
  readonly required_ready: number
  readonly required_total: number
  readonly auth_verifier_ready: boolean
}

export const isReady = (report: ReadinessReport): boolean =>
  report.auth_verifier_ready && report.required_ready === report.required_total

/** Answers /readyz for one generation. */
export class Readiness extends Context.Tag("gateway/Readiness")<
  Readiness,
  { readonly report: Effect.Effect<ReadinessReport> }
>() {}

/**
 * Readiness of a generation: its backends (a backend serving an inherited catalog is not ready:
 * docs/mcp.md, "Backends") and its token verifier (external JWKS loaded, or the Signer's key present).
 */
export const ReadinessLive = Layer.effect(
  Readiness,
  Effect.gen(function* () {
    const { slots } = yield* Backends
    const verifier = yield* BearerVerifier
    return {
      report: Effect.map(verifier.ready, (verifierReady) => {
        const ready = slots.filter((slot) => slot.status === "ready")
        return {
          backends_ready: ready.length,
          backends_total: slots.length,
          required_ready: ready.filter((slot) => slot.config.required).length,
          required_total: slots.filter((slot) => slot.config.required).length,
          auth_verifier_ready: verifierReady
        }
      })
    }
  })
)
