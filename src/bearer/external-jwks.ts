import { Context, Duration, Effect, Runtime } from "effect"
import * as jose from "jose"
import { fetchJwks, readCaBundle } from "./external-jwks-fetch.js"

/**
 * The external issuer's signing keys (auth.mode `external`), for one generation.
 *
 * - A background fiber loads the key set at once, retries a failed load with capped backoff, and
 *   refreshes a loaded set every `refreshInterval`; a failed refresh keeps the last good set. The fiber
 *   lives in the generation's scope: closing the generation stops it and aborts a fetch in flight.
 * - A token naming an unknown `kid` triggers one refetch, at most once per `unknownKidCooldown` (counted
 *   from the last fetch of any kind), so a stream of forged kids cannot become a stream of fetches.
 *   Concurrent refetches share one fetch. Every fetch is bounded by `fetchTimeout`.
 * - Nothing else fetches: building the generation never waits for the key set, and until the first set
 *   is loaded requests are refused at once (`VerifierNotReady`), never held up by a fetch.
 */
export interface ExternalKeys {
  readonly getKey: jose.JWTVerifyGetKey
  /** True once a key set has been loaded: what /readyz reports as `auth_verifier_ready`. */
  readonly loaded: Effect.Effect<boolean>
}

export interface ExternalJwksTimingShape {
  readonly fetchTimeout: Duration.Duration
  readonly unknownKidCooldown: Duration.Duration
  readonly refreshInterval: Duration.Duration
  /** Backoff of a failing load: `retryFirst`, doubling up to `retryMax`. */
  readonly retryFirst: Duration.Duration
  readonly retryMax: Duration.Duration
}

/** The timings above; a Reference so tests can shorten them without a configuration key for it. */
export class ExternalJwksTiming extends Context.Reference<ExternalJwksTiming>()("gateway/ExternalJwksTiming", {
  defaultValue: (): ExternalJwksTimingShape => ({
    fetchTimeout: Duration.seconds(5),
    unknownKidCooldown: Duration.seconds(30),
    refreshInterval: Duration.minutes(10),
    retryFirst: Duration.millis(500),
    retryMax: Duration.seconds(30)
  })
}) {}

/** A token arrived before any key set could be loaded: the gateway cannot judge it (503, not 401). */
export class VerifierNotReady extends Error {
  constructor() {
    super("the external issuer's key set is not loaded yet")
  }
}

export interface ExternalJwksSettings {
  readonly jwks_url: string
  readonly ca_file?: string | undefined
}

const retryDelay = (timing: ExternalJwksTimingShape, failures: number): Duration.Duration =>
  Duration.min(Duration.times(timing.retryFirst, 2 ** Math.min(Math.max(failures - 1, 0), 16)), timing.retryMax)

export const makeExternalKeys = (settings: ExternalJwksSettings) =>
  Effect.gen(function* () {
    const timing = yield* ExternalJwksTiming
    const ca = settings.ca_file === undefined ? undefined : yield* readCaBundle(settings.ca_file)
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const closing = new AbortController()
    yield* Effect.addFinalizer(() => Effect.sync(() => closing.abort()))

    let current: jose.JWTVerifyGetKey | undefined
    let lastFetchAt = Number.NEGATIVE_INFINITY
    let inFlight: Promise<boolean> | undefined

    /** One fetch shared by everyone who asks while it runs; true when a key set was loaded. */
    const reload = (why: string): Promise<boolean> => {
      inFlight ??= (async () => {
        lastFetchAt = Date.now()
        try {
          const keySet = await fetchJwks(settings.jwks_url, {
            ca,
            timeoutMs: Duration.toMillis(timing.fetchTimeout),
            signal: closing.signal
          })
          current = jose.createLocalJWKSet(keySet)
          return true
        } catch (error) {
          if (!closing.signal.aborted) {
            const reason = error instanceof Error ? error.message : String(error)
            runFork(
              Effect.logWarning("external JWKS not loaded").pipe(
                Effect.annotateLogs({ url: settings.jwks_url, why, reason })
              )
            )
          }
          return false
        } finally {
          inFlight = undefined
        }
      })()
      return inFlight
    }

    const background = Effect.gen(function* () {
      let failures = 0
      while (true) {
        const loaded = yield* Effect.promise(() => reload(failures === 0 && current !== undefined ? "refresh" : "load"))
        failures = loaded ? 0 : failures + 1
        yield* Effect.sleep(loaded ? timing.refreshInterval : retryDelay(timing, failures))
      }
    })
    yield* Effect.forkScoped(background)

    const cooldownMs = Duration.toMillis(timing.unknownKidCooldown)
    const getKey: jose.JWTVerifyGetKey = async (header, token) => {
      const keys = current
      if (keys === undefined) throw new VerifierNotReady()
      try {
        return await keys(header, token)
      } catch (error) {
        // A fetch already under way is joined whatever the cooldown: it may bring exactly this key.
        const mayRefetch =
          error instanceof jose.errors.JWKSNoMatchingKey &&
          !closing.signal.aborted &&
          (inFlight !== undefined || Date.now() - lastFetchAt >= cooldownMs)
        if (!mayRefetch) throw error
        await reload("unknown kid")
        return (current ?? keys)(header, token)
      }
    }

    const keys: ExternalKeys = { getKey, loaded: Effect.sync(() => current !== undefined) }
    return keys
  })
