import { Effect, FiberSet, Layer, Queue } from "effect"
import { loadConfig } from "../config/load.js"
import { parseListen } from "../config/rules.js"
import type { LoadedConfig } from "../config/service.js"
import { staticChanges } from "../config/static-fields.js"
import { buildGeneration, closeGeneration, type ExtraRoutes, type Generation, waitIdle } from "./generation.js"
import type { BaseServices } from "./generation-layer.js"
import { adminRoute, type Listener, makeListener } from "./listener.js"
import { type Signal, signalQueue } from "./signals.js"

export interface SuperviseOptions {
  readonly configFile: string
  readonly env: Readonly<Record<string, string | undefined>>
  readonly loaded: LoadedConfig
  readonly base: Layer.Layer<BaseServices, unknown>
  /** Runs once the process-wide services exist, before the first generation (the `--dev` setup). */
  readonly prepare?: Effect.Effect<void, never, BaseServices>
  readonly extraRoutes?: ExtraRoutes
  /** Told the listener's port once serving (tests listen on port 0). */
  readonly onListening?: (port: number) => void
}

/**
 * Runs the gateway until SIGINT/SIGTERM: builds the process-wide services, the first generation and
 * the listener, swaps generations on SIGHUP (spec Versioning 7) and drains on shutdown (Versioning 9).
 */
export const supervise = (options: SuperviseOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { loaded } = options
      // Handlers first: until they exist a SIGHUP would kill the process (Node's default), and a
      // SIGTERM during start-up is queued and honoured once serving begins.
      const signals = yield* signalQueue
      const base = yield* Layer.build(options.base)
      if (options.prepare !== undefined) yield* Effect.provide(options.prepare, base)
      const listen = parseListen(loaded.config.server.listen)!
      const first = yield* buildGeneration(1, loaded, base, options.extraRoutes)
      const listener = yield* makeListener(listen.host, listen.port)
      // admin.mode local (the only mode yet): the Management API on admin.listen, loopback only.
      const adminListen = parseListen(loaded.config.admin.listen)!
      const adminListener = yield* makeListener(adminListen.host, adminListen.port, adminRoute)
      const listeners = [listener, adminListener]
      const state = { current: first, next: 2, live: new Set<Generation>([first]) }
      for (const each of listeners) each.activate(first)
      options.onListening?.(listener.port)
      yield* Effect.logInfo("gateway serving").pipe(
        Effect.annotateLogs({
          address: `${listen.host}:${listener.port}`,
          admin: `${adminListen.host}:${adminListener.port}`,
          generation: 1,
          store: loaded.config.storage.type
        })
      )

      const reloads = yield* FiberSet.make()
      const retiring = yield* FiberSet.make()
      const lock = yield* Effect.makeSemaphore(1)

      const retire = (old: Generation) =>
        waitIdle(old, old.loaded.config.drain_timeout).pipe(
          Effect.zipRight(closeGeneration(old)),
          Effect.zipRight(Effect.sync(() => state.live.delete(old))),
          Effect.zipRight(Effect.logInfo("generation closed").pipe(Effect.annotateLogs("generation", old.id)))
        )

      const reload = lock.withPermits(1)(
        Effect.gen(function* () {
          const candidateConfig = yield* loadConfig(options.configFile, options.env).pipe(
            Effect.tapError((error) => Effect.logError("reload rejected: invalid configuration", error.message)),
            Effect.option
          )
          if (candidateConfig._tag === "None") return
          const changed = staticChanges(state.current.loaded.config, candidateConfig.value.config)
          if (changed.length > 0) {
            return yield* Effect.logError("reload rejected: static fields changed; restart to apply them").pipe(
              Effect.annotateLogs("fields", changed)
            )
          }
          const id = state.next++
          const previous = state.current.catalogs()
          const candidate = yield* buildGeneration(id, candidateConfig.value, base, options.extraRoutes, previous).pipe(
            Effect.tapErrorCause((cause) =>
              Effect.logError("reload failed: the previous generation keeps serving", cause)
            ),
            Effect.option
          )
          if (candidate._tag === "None") return
          const old = state.current
          state.current = candidate.value
          state.live.add(candidate.value)
          for (const each of listeners) each.activate(candidate.value)
          yield* Effect.logInfo("reloaded").pipe(Effect.annotateLogs({ generation: id, previous: old.id }))
          yield* FiberSet.run(retiring, retire(old))
        })
      )

      let signal: Signal = yield* Queue.take(signals)
      while (signal === "SIGHUP") {
        yield* FiberSet.run(reloads, reload)
        signal = yield* Queue.take(signals)
      }
      yield* shutdown({ listeners, state, signals, reloads, retiring, signal })
    })
  )

interface ShutdownState {
  readonly listeners: ReadonlyArray<Listener>
  readonly state: { current: Generation; live: Set<Generation> }
  readonly signals: Queue.Queue<Signal>
  readonly reloads: FiberSet.FiberSet
  readonly retiring: FiberSet.FiberSet
  readonly signal: Signal
}

/** Spec Versioning 9: stop accepting, drain for drain_timeout, then cancel and force-close. */
const shutdown = ({ listeners, state, signals, reloads, retiring, signal }: ShutdownState) =>
  Effect.gen(function* () {
    const drain = state.current.loaded.config.drain_timeout
    yield* Effect.logInfo("shutting down").pipe(Effect.annotateLogs({ signal, in_flight: inFlight(state.live) }))
    // A candidate still being built is cancelled; closing its scope releases what it opened.
    yield* FiberSet.clear(reloads)
    yield* FiberSet.clear(retiring)
    for (const listener of listeners) listener.stopAccepting()
    // A second SIGINT/SIGTERM skips the rest of the drain.
    const secondSignal = Queue.take(signals).pipe(Effect.repeat({ until: (next) => next !== "SIGHUP" }))
    yield* Effect.forEach(state.live, (generation) => waitIdle(generation, drain), { concurrency: "unbounded" }).pipe(
      Effect.raceFirst(secondSignal)
    )
    const cancelled = inFlight(state.live)
    yield* Effect.forEach(state.live, closeGeneration, { concurrency: "unbounded", discard: true })
    for (const listener of listeners) listener.closeAll()
    yield* Effect.logInfo("stopped").pipe(Effect.annotateLogs({ cancelled }))
  })

const inFlight = (live: Set<Generation>) => [...live].reduce((sum, generation) => sum + generation.inFlight.size, 0)
