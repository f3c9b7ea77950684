import { Context, Duration, Effect, Either, Layer, Option, Queue, Runtime } from "effect"
import { Config } from "../../config/service.js"
import type { Cancellation } from "../../runtime/cancellation.js"
import { noManagedSources } from "../../sources/schema.js"
import type { BackendCatalog } from "../catalog/backend-catalog.js"
import { GatewayTools } from "../catalog/gateway-tools.js"
import { catalogIdentity } from "../catalog/identity.js"
import { buildIndex, type CatalogIndex } from "../catalog/index.js"
import { AnswerBudget, AnswerBudgetTag } from "./answer-budget.js"
import type { BackendChannel } from "./channel.js"
import { type BackendConnection, type BackendUnreachable, connectAndFetch, fetchCatalog } from "./connection.js"
import { failureClass } from "./failure-class.js"
import { type BackendSlot, ReconnectTiming, type Wakeup } from "./slot.js"

/** Catalogs of the generation being replaced, by catalog-source identity (docs/mcp.md, "Backends"). */
export class PreviousCatalogs extends Context.Tag("gateway/PreviousCatalogs")<
  PreviousCatalogs,
  ReadonlyMap<string, BackendCatalog>
>() {}

export class BackendsUnavailable extends Error {}

const probeSpacing = Duration.seconds(1)
/**
 * A refetch a backend's `list_changed` asks for starts at least this long after the one before it:
 * notifications in between fold into one refetch, so a backend announcing changes many times a second
 * costs one catalog read every 2 s, not one after another on the event loop every request shares.
 */
const changedSpacing = Duration.seconds(2)
const failureLogWindowMs = 30_000

const sameCatalog = (current: BackendCatalog | undefined, next: BackendCatalog) =>
  current !== undefined && JSON.stringify(current) === JSON.stringify(next)

/**
 * The backends of one generation: their MCP clients, catalogs and the aggregated index. Required
 * backends must connect during the build (a failure fails the generation: docs/operations.md); every
 * backend is tried once during the build, then a worker per backend keeps it connected (capped backoff)
 * and its catalog fresh (list_changed notifications, `catalog.refresh_interval`). Closing the
 * generation's scope stops the workers and closes the clients.
 */
export class Backends extends Context.Tag("gateway/Backends")<
  Backends,
  {
    readonly slots: ReadonlyArray<BackendSlot>
    /** The current aggregated catalog; synchronous, for the request hot path. */
    readonly index: () => CatalogIndex
    /**
     * Called by a request whose backend call failed below the protocol: the worker probes and
     * reconnects. Logged as `backend.call_failed` with the reason, at most once per backend every
     * 30 s (the next line counts the failures in between). `reason` must be safe to log.
     */
    readonly reportFailure: (backend: number, reason: string) => void
    /**
     * Called by a request that found the backend unavailable: the worker tries to connect at once
     * rather than at the end of its backoff (at most one attempt in flight, and one per
     * `calledSpacingMs`), so recovery does not wait longer the longer the outage was. Nothing is logged
     * here: the attempt's outcome is.
     */
    readonly wanted: (backend: number) => void
    /**
     * The channel of the backend's next connection, once the worker has made one after `previous`
     * failed; undefined if none is up by `until` (ms since epoch) or `signal` fires first — or as soon
     * as a probe the worker starts after this call finds the backend answering on its connection (it
     * is up and kept its session: the refusal was not a lost session, and no new connection is coming).
     * Call it right after `reportFailure`, which asks for that probe.
     */
    readonly nextChannel: (
      backend: number,
      previous: BackendChannel | undefined,
      until: number,
      signal: Cancellation
    ) => Promise<BackendChannel | undefined>
    /** Runs `listener` after every index rebuild (the /mcp endpoint tells subscribed clients). */
    readonly onIndexChange: (listener: () => void) => void
    /** Catalogs a following generation may inherit (docs/mcp.md, "Backends"). */
    readonly inheritable: () => ReadonlyMap<string, BackendCatalog>
    /** The process's count of memory held for backend answers, which this generation's calls take from. */
    readonly answers: AnswerBudget
  }
>() {}

export const BackendsLive = Layer.scoped(
  Backends,
  Effect.gen(function* () {
    const loaded = yield* Config
    const { config } = loaded
    const managed = loaded.sources ?? noManagedSources
    const previous = yield* Effect.serviceOption(PreviousCatalogs)
    const gatewayTools = yield* GatewayTools
    const timing = yield* ReconnectTiming
    // Backend token expiry is measured on the generation's clock (TestClock in tests).
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()
    // The process's one count of answer bytes held (a generation of its own where no base layer gives one).
    const answers = Option.getOrElse(yield* Effect.serviceOption(AnswerBudgetTag), () => new AnswerBudget())
    const budget = { answers, limit: config.server.max_answer_bytes_in_flight }
    const slots: Array<BackendSlot> = config.backends.map((backend) => ({
      config: backend,
      identity: catalogIdentity(backend),
      status: "connecting",
      client: undefined,
      channel: undefined,
      session: undefined,
      catalog: undefined,
      inherited: false
    }))
    const wakeups = yield* Effect.forEach(slots, () => Queue.sliding<Wakeup>(1))
    const listeners = new Set<() => void>()
    /**
     * Per backend: calls waiting for its next connection (`nextChannel`), told when one attaches and
     * when a probe finds the backend up on its connection (with the probe's number).
     */
    const channelWaiters = slots.map(() => new Set<(probe?: number) => void>())
    /** Per backend: how many probes (catalog refetches of a connected backend) the worker has started. */
    const probesStarted = slots.map(() => 0)
    let index = buildIndex([], gatewayTools)
    const runSync = Runtime.runSync(yield* Effect.runtime<never>())
    // Each collision is logged when it appears (and again if it reappears after being resolved).
    let collisionsLogged = new Set<string>()
    // A rule naming a tool its backend does not list (a typo, `deIete_note`): the tool it meant falls
    // to another rule, maybe `*` as a read tool. One warning per backend and name when it appears.
    let unmatchedLogged = new Set<string>()
    const warnUnmatchedRules = () => {
      const unmatched = new Set<string>()
      for (const slot of slots) {
        if (slot.catalog === undefined) continue
        const names = new Set(slot.catalog.tools.map((tool) => tool.name))
        for (const rule of slot.config.tool_rules) {
          for (const pattern of rule.tools) {
            if (pattern.endsWith("*") || names.has(pattern)) continue
            const key = JSON.stringify([slot.config.id, pattern])
            unmatched.add(key)
            if (unmatchedLogged.has(key)) continue
            runSync(
              Effect.logWarning("tool rule names no tool of its backend").pipe(
                Effect.annotateLogs({
                  event: "catalog.rule_unmatched",
                  backend: slot.config.id,
                  tool: pattern,
                  write: rule.write
                })
              )
            )
          }
        }
      }
      unmatchedLogged = unmatched
    }
    const publish = () => {
      index = buildIndex(
        slots.map((slot) => ({ config: slot.config, catalog: slot.catalog })),
        gatewayTools,
        managed
      )
      const current = new Set(index.collisions.map((collision) => JSON.stringify(collision)))
      for (const collision of index.collisions) {
        if (collisionsLogged.has(JSON.stringify(collision))) continue
        runSync(
          Effect.logWarning("catalog name collision").pipe(
            Effect.annotateLogs({ event: "catalog.name_collision", ...collision })
          )
        )
      }
      collisionsLogged = current
      warnUnmatchedRules()
      for (const listener of listeners) listener()
    }
    /**
     * Publishes `slot` with `catalog`; if the index cannot be built with it (a bug this should never
     * meet), the slot keeps the catalog it had, the index stays as it was, and the reason is logged —
     * the backend's worker, and every other backend's, go on.
     */
    const publishWith = (slot: BackendSlot, catalog: BackendCatalog, previous = slot.catalog) => {
      slot.catalog = catalog
      try {
        publish()
      } catch (error) {
        slot.catalog = previous
        runSync(
          Effect.logError("catalog.rejected").pipe(
            Effect.annotateLogs({
              event: "catalog.rejected",
              backend: slot.config.id,
              reason: (error instanceof Error ? error.message : String(error)).slice(0, 300)
            })
          )
        )
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => Promise.all(slots.map((slot) => slot.client?.close().catch(() => {})))).pipe(
        Effect.zipRight(Effect.sync(() => listeners.clear()))
      )
    )

    const disconnect = (slot: BackendSlot, reason: string) =>
      Effect.gen(function* () {
        const client = slot.client
        slot.client = undefined
        slot.channel = undefined
        slot.session = undefined
        slot.status = "unavailable"
        slot.lastError = failureClass(reason)
        if (client !== undefined) yield* Effect.promise(() => client.close().catch(() => {}))
        yield* Effect.logWarning("backend unavailable").pipe(Effect.annotateLogs({ backend: slot.config.id, reason }))
      })

    const attach = (
      slot: BackendSlot,
      result: Either.Either<BackendConnection & { readonly catalog: BackendCatalog }, BackendUnreachable>
    ) => {
      if (Either.isRight(result)) {
        Object.assign(slot, {
          client: result.right.client,
          channel: result.right.channel,
          session: result.right.session,
          catalog: result.right.catalog,
          inherited: false,
          status: "ready",
          catalogAt: now()
        })
        const waiting = channelWaiters[slots.indexOf(slot)]
        for (const wake of waiting ?? []) wake()
        return Effect.logInfo("backend connected").pipe(
          Effect.annotateLogs({ backend: slot.config.id, tools: result.right.catalog.tools.length })
        )
      }
      const inherited = previous._tag === "Some" ? previous.value.get(slot.identity) : undefined
      Object.assign(slot, {
        status: "unavailable",
        catalog: inherited,
        inherited: inherited !== undefined,
        lastError: failureClass(result.left.reason)
      })
      return Effect.logWarning("backend not connected").pipe(
        Effect.annotateLogs({ backend: slot.config.id, reason: result.left.reason, inherited: inherited !== undefined })
      )
    }

    // The first attempt, for every backend at once; a required backend that fails fails the generation.
    const first = yield* Effect.forEach(
      slots,
      (slot, at) =>
        Effect.either(connectAndFetch(slot.config, () => Queue.unsafeOffer(wakeups[at]!, "changed"), now, budget)),
      { concurrency: "unbounded" }
    )
    const failedRequired = slots.filter((slot, at) => slot.config.required && Either.isLeft(first[at]!))
    for (const [at, slot] of slots.entries()) yield* attach(slot, first[at]!)
    if (failedRequired.length > 0) {
      return yield* Effect.fail(
        new BackendsUnavailable(
          `required backend(s) not reachable: ${failedRequired.map((slot) => slot.config.id).join(", ")}`
        )
      )
    }
    publish()

    // `backend.call_failed`: the first failure at once, then one line per backend and window with a count.
    const failureLog = slots.map(() => ({ loggedAt: Number.NEGATIVE_INFINITY, since: 0 }))
    const logFailure = (at: number, slot: BackendSlot, reason: string) => {
      const entry = failureLog[at]!
      const time = now()
      if (time - entry.loggedAt < failureLogWindowMs) {
        entry.since++
        return
      }
      const suppressed = entry.since
      entry.loggedAt = time
      entry.since = 0
      runSync(
        Effect.logWarning("backend.call_failed").pipe(
          Effect.annotateLogs({
            event: "backend.call_failed",
            backend: slot.config.id,
            reason,
            ...(suppressed > 0 ? { failures_not_logged: suppressed } : {})
          })
        )
      )
    }

    const refreshEvery = config.catalog.refresh_interval
    const worker = (slot: BackendSlot, at: number) =>
      Effect.gen(function* () {
        let attempt = 0
        const wake = wakeups[at]!
        // When the last attempt to connect began: attempts a caller prompts are spaced from it.
        let attemptedAt = Number.NEGATIVE_INFINITY
        // When the last refetch a `list_changed` asked for began: the next one is spaced from it.
        let changedAt = Number.NEGATIVE_INFINITY
        while (true) {
          if (slot.client === undefined) {
            // The backoff's wait, cut short by a caller who wants the backend (any wakeup: a call that
            // failed or found it unavailable). The queue holds one wakeup, so a flood is one attempt.
            const waited = yield* Queue.take(wake).pipe(
              Effect.timeoutTo({
                duration: Duration.millis(timing.delayMs(attempt)),
                onTimeout: () => false,
                onSuccess: () => true
              })
            )
            if (waited) {
              const spacing = attemptedAt + timing.calledSpacingMs - now()
              if (spacing > 0) yield* Effect.sleep(Duration.millis(spacing))
            }
            attemptedAt = now()
            const result = yield* Effect.either(
              connectAndFetch(slot.config, () => Queue.unsafeOffer(wake, "changed"), now, budget)
            )
            attempt = Either.isLeft(result) ? attempt + 1 : 0
            if (Either.isRight(result)) {
              const before = slot.catalog
              yield* attach(slot, result)
              publishWith(slot, result.right.catalog, before)
            }
            continue
          }
          const reason = yield* Queue.take(wake).pipe(
            Effect.timeoutTo({ duration: refreshEvery, onTimeout: () => "interval" as const, onSuccess: (why) => why })
          )
          if (reason === "changed") {
            // Announcements in between fold into this refetch (the wake queue holds one); a failed
            // call's probe is not held back by them.
            const spacing = changedAt + Duration.toMillis(changedSpacing) - now()
            if (spacing > 0) yield* Effect.sleep(Duration.millis(spacing))
            changedAt = now()
          }
          // A refetch is also the probe after a failed call: `ping` is not in the 2026-07-28 revision,
          // and a backend that answers its lists is one worth keeping.
          // Only a catalog that changed is published: publishing rebuilds the index, drops the cached
          // list pages and tells every subscribed client its lists changed.
          const check = fetchCatalog(slot.config, slot.client).pipe(
            Effect.tap((catalog) =>
              Effect.sync(() => {
                slot.catalogAt = now()
                if (sameCatalog(slot.catalog, catalog)) return
                publishWith(slot, catalog)
              })
            )
          )
          const probe = (probesStarted[at] ?? 0) + 1
          probesStarted[at] = probe
          const outcome = yield* Effect.either(check)
          if (Either.isLeft(outcome)) yield* disconnect(slot, `${reason}: ${outcome.left.reason}`)
          else {
            // Up on its connection: calls waiting for a new one stop waiting.
            for (const wake of channelWaiters[at] ?? []) wake(probe)
            // Failed calls can come in a stream; one probe a second is enough to notice a dead backend.
            if (reason === "failed") yield* Effect.sleep(probeSpacing)
          }
        }
      })
    yield* Effect.forEach(slots, (slot, at) => Effect.forkScoped(worker(slot, at)), { discard: true })

    return {
      slots,
      index: () => index,
      reportFailure: (at, reason) => {
        const queue = wakeups[at]
        const slot = slots[at]
        if (queue === undefined || slot === undefined) return
        slot.lastError = failureClass(reason)
        logFailure(at, slot, reason)
        Queue.unsafeOffer(queue, "failed")
      },
      wanted: (at) => {
        const queue = wakeups[at]
        if (queue !== undefined && slots[at]?.client === undefined) Queue.unsafeOffer(queue, "called")
      },
      nextChannel: (at, previous, until, signal) => {
        const slot = slots[at]
        const waiting = channelWaiters[at]
        const fresh = () => (slot?.channel !== undefined && slot.channel !== previous ? slot.channel : undefined)
        if (slot === undefined || waiting === undefined || fresh() !== undefined || signal.aborted) {
          return Promise.resolve(fresh())
        }
        // Told by `attach` when the worker has connected again, and by the worker's probes; no polling.
        // Only a probe started after this call counts: one already running may predate the failure.
        const after = probesStarted[at] ?? 0
        return new Promise<BackendChannel | undefined>((resolve) => {
          const finish = () => {
            clearTimeout(timer)
            signal.removeEventListener("abort", finish)
            waiting.delete(wake)
            resolve(fresh())
          }
          const wake = (probe?: number) => {
            if (fresh() !== undefined || (probe !== undefined && probe > after)) finish()
          }
          const timer = setTimeout(finish, Math.max(0, until - Date.now()))
          signal.addEventListener("abort", finish, { once: true })
          waiting.add(wake)
        })
      },
      onIndexChange: (listener) => {
        listeners.add(listener)
      },
      inheritable: () =>
        new Map(slots.flatMap((slot) => (slot.catalog === undefined ? [] : [[slot.identity, slot.catalog] as const]))),
      answers
    }
  })
)
