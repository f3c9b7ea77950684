import { Clock, Context, Effect, Layer, Option, Redacted, Ref } from "effect"
import type * as oauth from "oauth4webapi"
import { readCaBundle } from "../../bearer/external-jwks-fetch.js"
import { Config } from "../../config/service.js"
import type { UpstreamIdentity } from "./claims.js"
import { connectionOf, type UpstreamConnection } from "./connection.js"
import {
  authorizationUrl,
  completeSignIn,
  discover,
  newAttempt,
  type StepUp,
  type UpstreamAttempt,
  type UpstreamRefused
} from "./flow.js"

/** A discovery document is fetched again after this long (or at once after a failed sign-in step). */
const DISCOVERY_TTL_MS = 60 * 60 * 1000

/** The fixed redirect the upstream client is registered with: `{base_url}/sso/callback`. */
export const callbackUrlOf = (issuer: string) => `${new URL(issuer).origin}/sso/callback`

export interface UpstreamSignInService {
  /** The configured upstream, if any (the sign-in page offers it). */
  readonly connection: UpstreamConnection | undefined
  /** A new trip to the upstream: what to keep, and where to send the browser. */
  readonly start: (
    stepUp?: StepUp
  ) => Effect.Effect<{ readonly attempt: UpstreamAttempt; readonly url: string }, UpstreamRefused>
  /** The browser is back at `/sso/callback` (`callback` is that full URL). */
  readonly complete: (callback: URL, attempt: UpstreamAttempt) => Effect.Effect<UpstreamIdentity, UpstreamRefused>
}

/**
 * Sign-in through the enterprise identity provider (`auth.sso.upstream`; docs/enterprise-sign-in.md).
 * Built with each generation from the static `auth` settings: the private CA (`ca_file`) is read once
 * here, so a wrong path stops the start. Discovery is cached for an hour and fetched again after any
 * failure, so a provider that rotated its keys or endpoints is picked up at the next sign-in.
 */
export class UpstreamSignIn extends Context.Tag("gateway/UpstreamSignIn")<UpstreamSignIn, UpstreamSignInService>() {}

export const UpstreamSignInLive = Layer.effect(
  UpstreamSignIn,
  Effect.gen(function* () {
    const { config, secrets } = yield* Config
    const upstream = config.auth.sso.upstream
    const secret = secrets.upstreamClientSecret
    if (config.auth.mode !== "builtin" || upstream === undefined || secret === undefined) {
      const none = Effect.die(new Error("no upstream identity provider is configured"))
      return { connection: undefined, start: () => none, complete: () => none }
    }
    const ca =
      upstream.ca_file === undefined ? undefined : yield* readCaBundle(upstream.ca_file, "auth.sso.upstream.ca_file")
    const connection = connectionOf(upstream, Redacted.make(Redacted.value(secret)), ca)
    const redirectUri = callbackUrlOf(config.auth.issuer)
    const cached = yield* Ref.make(Option.none<{ readonly server: oauth.AuthorizationServer; readonly at: number }>())

    const server = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const current = yield* Ref.get(cached)
      if (Option.isSome(current) && now - current.value.at < DISCOVERY_TTL_MS) return current.value.server
      const fresh = yield* discover(connection)
      yield* Ref.set(cached, Option.some({ server: fresh, at: now }))
      return fresh
    })
    // A failure that may come from stale metadata (moved endpoints, rotated keys) fetches it again next
    // time; a refused person (tenant, claims) does not, so failed sign-ins cannot make it refetch at will.
    const forgetOnFailure = <A, R>(effect: Effect.Effect<A, UpstreamRefused, R>) =>
      Effect.tapError(effect, (error) =>
        error.reason === "discovery_failed" ||
        error.reason === "token_request_failed" ||
        (error.reason === "id_token_invalid" && error.check === "signature")
          ? Ref.set(cached, Option.none())
          : Effect.void
      )

    return {
      connection,
      start: (stepUp?: StepUp) =>
        forgetOnFailure(
          Effect.gen(function* () {
            const found = yield* server
            const attempt = newAttempt(stepUp)
            const url = yield* Effect.promise(() => authorizationUrl(found, connection, attempt, redirectUri, stepUp))
            return { attempt, url }
          })
        ),
      complete: (callback: URL, attempt: UpstreamAttempt) =>
        forgetOnFailure(
          Effect.flatMap(server, (found) => completeSignIn(found, connection, callback, attempt, redirectUri))
        )
    }
  })
)
