import { Cause, Effect, FiberSet, Layer, Queue } from "effect"
import { loadConfig } from "../config/load.js"
import { parseListen } from "../config/rules.js"
import type { LoadedConfig } from "../config/service.js"
import { staticChanges } from "../config/static-fields.js"
import { metrics } from "../observability/metrics.js"
import type { ExtraRoutes } from "./build-generation.js"
import type { BaseServices } from "./generation-layer.js"
import { acquireGenerations } from "./generations.js"
import { adminRoute, type Listener, makeListener, metricsRoute } from "./listener.js"
import { metricSources } from "./metric-sources.js"
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
 * the listeners, reloads on SIGHUP and drains on shutdown (docs/operations.md). The
 * generations themselves — reload, drain, close — are the Generations service (src/runtime/generations.ts).
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
      const listeners: Array<Listener> = []
      // Closed with this scope, so a listener that cannot bind closes the first generation too.
      const generations = yield* acquireGenerations({
        base,
        first: loaded,
        activate: (generation) => {
          for (const listener of listeners) listener.activate(generation)
        },
        ...(options.extraRoutes === undefined ? {} : { extraRoutes: options.extraRoutes })
      })
      const listen = parseListen(loaded.config.server.listen)!
      // The Management API and the console on admin.listen: loopback in local mode, any address in remote.
      const adminListen = parseListen(loaded.config.admin.listen)!
      const listener = yield* makeListener(listen.host, listen.port)
      const adminListener = yield* makeListener(adminListen.host, adminListen.port, adminRoute, "admin.listen")
      // `/metrics` is served on the admin listener, and on `observability.metrics_listen` when set.
      metrics.setSources(metricSources(base, generations))
      const metricsListen = parseListen(loaded.config.observability.metrics_listen ?? "")
      const metricsListener =
        metricsListen === undefined
          ? undefined
          : yield* makeListener(metricsListen.host, metricsListen.port, metricsRoute, "observability.metrics_listen")
      for (const each of [listener, adminListener, ...(metricsListener === undefined ? [] : [metricsListener])]) {
        listeners.push(each)
        each.activate(generations.current())
      }
      options.onListening?.(listener.port)
      yield* Effect.logInfo("gateway serving").pipe(
        Effect.annotateLogs({
          event: "gateway.serving",
          address: `${listen.host}:${listener.port}`,
          admin: `${adminListen.host}:${adminListener.port}`,
          generation: 1,
          store: loaded.config.storage.type
        })
      )

      const reloads = yield* FiberSet.make()
      const reload = Effect.gen(function* () {
        const candidate = yield* loadConfig(options.configFile, options.env).pipe(
          Effect.tapError((error) =>
            Effect.logError("reload rejected: invalid configuration").pipe(
              Effect.annotateLogs({
                event: "config.reload_rejected",
                reason: "invalid_config",
                problems: error.message
              }),
              Effect.zipRight(Effect.sync(() => metrics.reload("invalid_config")))
            )
          ),
          Effect.option
        )
        if (candidate._tag === "None") return
        const changed = staticChanges(generations.current().loaded.config, candidate.value.config)
        if (changed.length > 0) {
          metrics.reload("static_changed")
          return yield* Effect.logError("reload rejected: static fields changed; restart to apply them").pipe(
            Effect.annotateLogs({ event: "config.reload_rejected", reason: "static_changed", fields: changed })
          )
        }
        yield* generations.reload(candidate.value).pipe(
          // The reason in one sentence (a backend that did not connect, say); a trace only for a defect.
          Effect.tapErrorCause((cause) =>
            Effect.logError("reload failed: the previous generation keeps serving").pipe(
              Effect.annotateLogs({ event: "config.reload_failed", reason: reloadFailure(cause) }),
              Cause.isDie(cause) ? Effect.annotateLogs({ defect: Cause.pretty(cause) }) : (effect) => effect
            )
          ),
          Effect.ignore
        )
      })

      let signal: Signal = yield* Queue.take(signals)
      while (signal === "SIGHUP") {
        yield* FiberSet.run(reloads, reload)
        signal = yield* Queue.take(signals)
      }

      // docs/operations.md, "Shutdown": stop accepting, drain for drain_timeout, then cancel and force-close.
      const drain = generations.current().loaded.config.drain_timeout
      yield* Effect.logInfo("shutting down").pipe(
        Effect.annotateLogs({ event: "gateway.shutting_down", signal, in_flight: generations.inFlight() })
      )
      // A candidate still being built is cancelled; closing its scope releases what it opened.
      yield* FiberSet.clear(reloads)
      for (const each of listeners) each.stopAccepting()
      // A second SIGINT/SIGTERM skips the rest of the drain.
      const secondSignal = Queue.take(signals).pipe(Effect.repeat({ until: (next) => next !== "SIGHUP" }))
      const cancelled = yield* generations.shutdown(drain, secondSignal)
      for (const each of listeners) each.closeAll()
      yield* Effect.logInfo("stopped").pipe(Effect.annotateLogs({ event: "gateway.stopped", cancelled }))
    })
  )

/** A failed reload's reason as one line: the failure's own message, without a stack. */
const reloadFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  const text = failure instanceof Error ? failure.message : typeof failure === "string" ? failure : String(failure)
  return text.split("\n")[0]?.slice(0, 500) ?? "failed"
}
