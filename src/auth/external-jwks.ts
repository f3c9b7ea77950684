import { Duration, Effect, Schedule } from "effect"
import * as jose from "jose"

/**
 * The external issuer's signing keys (auth.mode `external`). jose caches the set, refetches it when a
 * token names an unknown `kid` (at most once per cooldown, so a stream of forged kids cannot turn into a
 * stream of fetches) and bounds every fetch with a timeout.
 */
export interface ExternalKeys {
  readonly getKey: jose.JWTVerifyGetKey
  /** True once a key set has been fetched: what /readyz reports as `auth_verifier_ready`. */
  readonly loaded: Effect.Effect<boolean>
}

export const fetchTimeout = Duration.seconds(5)
export const unknownKidCooldown = Duration.seconds(30)
export const maxCacheAge = Duration.minutes(10)

/** Starts loading in the background (retrying with capped backoff) so readiness turns true without traffic. */
export const makeExternalKeys = (jwksUrl: string) =>
  Effect.gen(function* () {
    const set = jose.createRemoteJWKSet(new URL(jwksUrl), {
      timeoutDuration: Duration.toMillis(fetchTimeout),
      cooldownDuration: Duration.toMillis(unknownKidCooldown),
      cacheMaxAge: Duration.toMillis(maxCacheAge)
    })
    const load = Effect.tryPromise(() => set.reload())
    yield* load.pipe(
      Effect.tapError(() =>
        Effect.logWarning("external JWKS not loaded yet; retrying").pipe(Effect.annotateLogs("url", jwksUrl))
      ),
      Effect.retry(
        Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(30))))
      ),
      Effect.ignore,
      Effect.forkScoped
    )
    const keys: ExternalKeys = {
      getKey: set,
      loaded: Effect.sync(() => set.jwks() !== undefined)
    }
    return keys
  })
