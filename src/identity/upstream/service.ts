import { Clock, Context, Effect, Layer, Redacted, Ref } from "effect"
import type * as oauth from "oauth4webapi"
import { readCaBundle } from "../../bearer/external-jwks-fetch.js"
import { Config } from "../../config/service.js"
import { oidcConnectionOf } from "../providers/draft.js"
import { IdentityProviders } from "../providers/service.js"
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
/** Discovery documents kept (the connection in use, and drafts being tested). */
const MAX_CACHED_CONNECTIONS = 8

/** The fixed redirect the upstream client is registered with: `{base_url}/sso/callback`. */
export const callbackUrlOf = (issuer: string) => `${new URL(issuer).origin}/sso/callback`

export interface UpstreamSignInService {
  /** The identity provider people sign in with now, if any (the sign-in page offers it). */
  readonly current: Effect.Effect<UpstreamConnection | undefined>
  /** A new trip to `connection`: what to keep, and where to send the browser. */
  readonly start: (
    connection: UpstreamConnection,
    stepUp?: StepUp
  ) => Effect.Effect<{ readonly attempt: UpstreamAttempt; readonly url: string }, UpstreamRefused>
  /** The browser is back at `/sso/callback` (`callback` is that full URL). */
  readonly complete: (
    connection: UpstreamConnection,
    callback: URL,
    attempt: UpstreamAttempt
  ) => Effect.Effect<UpstreamIdentity, UpstreamRefused>
}

/**
 * Sign-in through the enterprise identity provider (docs/enterprise-sign-in.md): the configuration
 * file's `auth.sso.upstream` when it has one (its private CA is read here, so a wrong path stops the
 * start), else the OIDC connection stored through the Management API, read at every sign-in so a save
 * applies at once. Discovery is cached for an hour per connection and fetched again after a failure that
 * may come from stale metadata.
 */
export class UpstreamSignIn extends Context.Tag("gateway/UpstreamSignIn")<UpstreamSignIn, UpstreamSignInService>() {}

export const UpstreamSignInLive = Layer.effect(
  UpstreamSignIn,
  Effect.gen(function* () {
    const { config, secrets } = yield* Config
    const stored = yield* IdentityProviders
    const upstream = config.auth.sso.upstream
    const secret = secrets.upstreamClientSecret
    const builtin = config.auth.mode === "builtin"
    const configured =
      builtin && upstream !== undefined && secret !== undefined
        ? connectionOf(
            upstream,
            Redacted.make(Redacted.value(secret)),
            upstream.ca_file === undefined
              ? undefined
              : yield* readCaBundle(upstream.ca_file, "auth.sso.upstream.ca_file")
          )
        : undefined

    const current: Effect.Effect<UpstreamConnection | undefined> =
      !builtin || configured !== undefined
        ? Effect.succeed(configured)
        : Effect.map(stored.current, ({ settings: { oidc }, oidcClientSecret }) =>
            oidc.enabled && oidc.issuer !== undefined && oidc.client_id !== undefined && oidcClientSecret !== undefined
              ? oidcConnectionOf({ ...oidc, issuer: oidc.issuer, client_id: oidc.client_id }, oidcClientSecret)
              : undefined
          )

    const cache = yield* Ref.make(
      new Map<string, { readonly server: oauth.AuthorizationServer; readonly at: number }>()
    )
    /** Connections are told apart by namespace and secret-free settings: a save that changes either refetches. */
    const keyOf = (connection: UpstreamConnection) =>
      JSON.stringify([connection.namespace, connection.endpoints ?? null, connection.ca ?? null])

    const server = (connection: UpstreamConnection) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const found = (yield* Ref.get(cache)).get(keyOf(connection))
        if (found !== undefined && now - found.at < DISCOVERY_TTL_MS) return found.server
        const fresh = yield* discover(connection)
        yield* Ref.update(cache, (entries) => {
          // Drafts tried through connection tests add entries: the oldest go past a few.
          const next = new Map(entries)
          next.delete(keyOf(connection))
          for (const key of next.keys()) if (next.size >= MAX_CACHED_CONNECTIONS) next.delete(key)
          return next.set(keyOf(connection), { server: fresh, at: now })
        })
        return fresh
      })
    // A failure that may come from stale metadata (moved endpoints, rotated keys) fetches it again next
    // time; a refused code or person does not, so forged callbacks cannot make it refetch at will.
    const forgetOnFailure = <A, R>(connection: UpstreamConnection, effect: Effect.Effect<A, UpstreamRefused, R>) =>
      Effect.tapError(effect, (error) =>
        error.reason === "discovery_failed" || (error.reason === "id_token_invalid" && error.check === "signature")
          ? Ref.update(cache, (entries) => {
              const next = new Map(entries)
              next.delete(keyOf(connection))
              return next
            })
          : Effect.void
      )
    const redirectUri = callbackUrlOf(config.auth.issuer)

    return {
      current,
      start: (connection: UpstreamConnection, stepUp?: StepUp) =>
        forgetOnFailure(
          connection,
          Effect.gen(function* () {
            const found = yield* server(connection)
            const attempt = newAttempt(connection.namespace, stepUp)
            const url = yield* Effect.promise(() => authorizationUrl(found, connection, attempt, redirectUri, stepUp))
            return { attempt, url }
          })
        ),
      complete: (connection: UpstreamConnection, callback: URL, attempt: UpstreamAttempt) =>
        forgetOnFailure(
          connection,
          Effect.flatMap(server(connection), (found) =>
            completeSignIn(found, connection, callback, attempt, redirectUri)
          )
        )
    }
  })
)
