import { Context, Effect, Layer } from "effect"
import { Config } from "../config/service.js"
import { Signer } from "../crypto/signer.js"

/** The readiness fields of the spec (Resources → Notification and archive shapes, "Readiness body"). */
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
 * Readiness before the data plane exists: backends are counted from the configuration and none is
 * connected yet, so a required backend keeps the gateway unready (deny on doubt).
 */
export const ReadinessFromConfig = Layer.effect(
  Readiness,
  Effect.gen(function* () {
    const { config } = yield* Config
    const signer = yield* Signer
    const required = config.backends.filter((backend) => backend.required).length
    return {
      report: Effect.map(signer.ready, (verifierReady) => ({
        backends_ready: 0,
        backends_total: config.backends.length,
        required_ready: 0,
        required_total: required,
        auth_verifier_ready: verifierReady
      }))
    }
  })
)
