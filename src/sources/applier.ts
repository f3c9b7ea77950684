import { Cause, Context, Data, Effect, Exit, Layer } from "effect"
import type { LoadedConfig } from "../config/service.js"
import { BackendsUnavailable } from "../mcp/upstream/backends.js"
import type { SourceOverlay } from "./compose.js"

/** The candidate generation of a change could not be built: the old one keeps serving, nothing was written. */
export class ReloadFailed extends Data.TaggedError("ReloadFailed")<{ readonly message: string }> {}

/**
 * What the Generations service gives this service once it exists (src/runtime/generations.ts): a reload
 * of the serving configuration composed with `overlay`, running `commit` after the candidate is built
 * and before it is activated — the one reload path, with a commit step.
 */
export interface Reloader {
  readonly reload: (overlay: SourceOverlay, commit: Effect.Effect<void, unknown>) => Effect.Effect<void, unknown>
  /** The configuration the current generation was built from (composed). */
  readonly serving: () => LoadedConfig
}

/** Marks a commit step that failed; its own failure is handed back to the caller as it was. */
class CommitStepFailed extends Data.TaggedError("CommitStepFailed") {}

/**
 * Applying a change to managed tool sources = a new generation (docs/tool-sources.md): build the
 * candidate from the database plus the change, commit the change (revision checks) only once the build
 * succeeded, then activate. A failed build or commit leaves the old generation serving and nothing
 * written. Process-wide; the Generations service attaches itself when it starts (the supervisor's and
 * the tests' in-process gateways alike).
 */
export class SourceApplier extends Context.Tag("gateway/SourceApplier")<
  SourceApplier,
  {
    readonly attach: (reloader: Reloader) => void
    readonly serving: () => LoadedConfig | undefined
    readonly apply: <A, E>(overlay: SourceOverlay, commit: Effect.Effect<A, E>) => Effect.Effect<A, E | ReloadFailed>
  }
>() {}

/** The message of a build failure that is safe to show: the composition's rules, required backends down. */
const reasonOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    if ("_tag" in error && error._tag === "ComposeFailed" && "message" in error) return String(error.message)
    if (error instanceof BackendsUnavailable) return error.message
  }
  return "the new generation could not be built (see the gateway's log)"
}

export const SourceApplierLive = Layer.sync(SourceApplier, () => {
  let reloader: Reloader | undefined
  const apply = <A, E>(overlay: SourceOverlay, commit: Effect.Effect<A, E>): Effect.Effect<A, E | ReloadFailed> =>
    Effect.gen(function* () {
      if (reloader === undefined) {
        return yield* new ReloadFailed({ message: "the gateway is still starting; try again" })
      }
      let committed: Exit.Exit<A, E> | undefined
      const step = Effect.flatMap(Effect.exit(commit), (exit) => {
        committed = exit
        return Exit.isSuccess(exit) ? Effect.void : Effect.fail(new CommitStepFailed())
      })
      const reloaded = yield* Effect.exit(reloader.reload(overlay, step))
      if (committed !== undefined && Exit.isFailure(committed)) return yield* committed
      if (Exit.isFailure(reloaded) || committed === undefined) {
        const reason = reasonOf(Exit.isFailure(reloaded) ? Cause.squash(reloaded.cause) : undefined)
        yield* Effect.logWarning("change not applied: its generation could not be built").pipe(
          Effect.annotateLogs({ reason })
        )
        return yield* new ReloadFailed({ message: reason })
      }
      return committed.value
    })
  return {
    attach: (next) => {
      reloader = next
    },
    serving: () => reloader?.serving(),
    apply
  }
})
