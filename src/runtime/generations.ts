import { Context, Duration, Effect, FiberSet, type Scope } from "effect"
import type { LoadedConfig } from "../config/service.js"
import { metrics } from "../observability/metrics.js"
import { SourceApplier } from "../sources/applier.js"
import { recoverProposals } from "../sources/changes-live.js"
import type { SourceOverlay } from "../sources/compose.js"
import { buildGeneration, closeGeneration, type ExtraRoutes, type Generation, waitIdle } from "./build-generation.js"
import type { BaseServices, GenerationOverrides } from "./generation-layer.js"

/**
 * The generations of one process (a generation is the scoped set of runtime resources built from one
 * validated configuration: docs/operations.md, "Generations and reload"): the first one, the reloads that
 * replace it and the drain of those they replace, and shutdown. The supervisor and the tests' in-process
 * gateways use this one service, so the reload and drain rules are written once (docs/operations.md, reload
 * and shutdown):
 *
 * - `reload` builds a candidate beside the current one; if the build fails the current one keeps
 *   serving; if it succeeds, new requests go to it (`activate`) and the old one drains for its own
 *   `drain_timeout`, then closes (its requests still running are cancelled);
 * - `shutdown` drains every live generation for `drain` (or until `skip` completes), then closes them;
 * - closing the scope `acquire` ran in closes every generation still live — also when something after
 *   the first build failed (the listener could not bind).
 */
export interface Generations {
  readonly current: () => Generation
  /**
   * Reloads are serialized; the candidate when it serves, a failure (old one serving) otherwise. With a
   * `step`, the candidate is composed with its overlay and `commit` runs after the build and before the
   * activation: a failed commit closes the candidate, and the old one keeps serving.
   */
  readonly reload: (loaded: LoadedConfig, step?: CommitStep) => Effect.Effect<Generation, unknown>
  /** How many requests were still running and got cancelled. */
  readonly shutdown: (drain: Duration.DurationInput, skip?: Effect.Effect<unknown>) => Effect.Effect<number>
  /** Requests in flight across every live generation. */
  readonly inFlight: () => number
  /** Generations replaced and still draining. */
  readonly draining: () => number
}

/** A change to managed tool sources, applied by a reload (src/sources/applier.ts). */
export interface CommitStep {
  readonly overlay: SourceOverlay
  readonly commit: Effect.Effect<void, unknown>
}

export interface GenerationsOptions {
  readonly base: Context.Context<BaseServices>
  readonly first: LoadedConfig
  /** Told of every generation that starts serving (the listeners route to it). */
  readonly activate: (generation: Generation) => void
  readonly extraRoutes?: ExtraRoutes
  readonly overrides?: GenerationOverrides
}

export const acquireGenerations = (options: GenerationsOptions): Effect.Effect<Generations, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    // Proposals left from before this start: unreviewed ones invalidated, interrupted ones `unknown`.
    yield* Effect.provide(recoverProposals, options.base)
    const first = yield* buildGeneration(
      1,
      options.first,
      options.base,
      options.extraRoutes,
      undefined,
      options.overrides
    )
    const live = new Set<Generation>([first])
    const state = { current: first, next: 2 }
    const retiring = yield* FiberSet.make()
    const lock = yield* Effect.makeSemaphore(1)
    /** Closes one generation; how many of its requests were cancelled. */
    const close = (generation: Generation) =>
      closeGeneration(generation).pipe(
        Effect.tap(() => Effect.sync(() => live.delete(generation))),
        Effect.tap(() =>
          Effect.logInfo("generation closed").pipe(
            Effect.annotateLogs({ event: "gateway.generation_closed", generation: generation.id })
          )
        )
      )
    yield* Effect.addFinalizer(() => Effect.forEach([...live], close, { concurrency: "unbounded", discard: true }))
    options.activate(first)

    const retire = (old: Generation) => waitIdle(old, old.loaded.config.drain_timeout).pipe(Effect.zipRight(close(old)))

    const reload = (loaded: LoadedConfig, step?: CommitStep) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const id = state.next++
          const candidate = yield* buildGeneration(
            id,
            loaded,
            options.base,
            options.extraRoutes,
            state.current.catalogs(),
            options.overrides,
            step?.overlay
          )
          if (step !== undefined) {
            yield* step.commit.pipe(Effect.tapErrorCause(() => closeGeneration(candidate)))
          }
          const old = state.current
          state.current = candidate
          live.add(candidate)
          options.activate(candidate)
          yield* Effect.logInfo("reloaded").pipe(
            Effect.annotateLogs({ event: "gateway.reloaded", generation: id, previous: old.id })
          )
          yield* FiberSet.run(retiring, retire(old))
          return candidate
        }).pipe(
          Effect.tapBoth({
            onFailure: () => Effect.sync(() => metrics.reload("build_failed")),
            onSuccess: () => Effect.sync(() => metrics.reload("applied"))
          })
        )
      )

    const inFlight = () => [...live].reduce((sum, generation) => sum + generation.requests.size, 0)

    const shutdown = (drain: Duration.DurationInput, skip: Effect.Effect<unknown> = Effect.never) =>
      Effect.gen(function* () {
        yield* FiberSet.clear(retiring)
        yield* Effect.forEach(live, (generation) => waitIdle(generation, Duration.decode(drain)), {
          concurrency: "unbounded"
        }).pipe(Effect.raceFirst(skip))
        const counts = yield* Effect.forEach([...live], close, { concurrency: "unbounded" })
        return counts.reduce((sum, count) => sum + count, 0)
      })

    // Changes to managed tool sources reload through this service too (src/sources/applier.ts).
    Context.get(options.base, SourceApplier).attach({
      reload: (overlay, commit) => reload(state.current.loaded, { overlay, commit }),
      serving: () => state.current.loaded
    })

    return { current: () => state.current, reload, shutdown, inFlight, draining: () => live.size - 1 }
  })
