import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { type Context, Effect, Either, Layer, Logger, Redacted, type Scope } from "effect"
import { stringify } from "yaml"
import { parseConfig } from "../../src/config/load.js"
import type { LoadedConfig } from "../../src/config/service.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { initAdmin } from "../../src/identity/local/admin.js"
import { baseLayer } from "../../src/runtime/base.js"
import type { Generation } from "../../src/runtime/build-generation.js"
import type { BaseServices, GenerationServices } from "../../src/runtime/generation-layer.js"
import { acquireGenerations } from "../../src/runtime/generations.js"
import { adminRoute, type Listener, makeListener, publicRoute } from "../../src/runtime/listener.js"
import type { ComposedSources } from "../../src/sources/schema.js"
import { type StoreKindUnderTest, withStorage, withTempDir } from "./databases.js"
import { freePort } from "./gateway-process.js"
import { type LogCapture, quietly, showLogs } from "./logs.js"

/** The built-in administrator's password in every test gateway. */
export const ADMIN_PASSWORD = "correct horse battery staple"

/**
 * An in-process gateway with the built-in authorization server, on a real loopback listener, built
 * inside the calling Effect scope: under `it.effect` its services run on the `TestClock`, so tests move
 * time with `TestClock.adjust`. The production base layer and generation; the administrator exists.
 */
export interface OAuthGateway {
  readonly baseUrl: string
  /** The Management API's origin (the admin listener); also its resource indicator. */
  readonly adminUrl: string
  readonly issuer: string
  readonly mcpUrl: string
  readonly loaded: LoadedConfig
  readonly base: Context.Context<BaseServices>
  /** The generation serving now (after a reload, the new one): its services, for `inGeneration`. */
  readonly generation: () => Generation
}

export interface OAuthGatewayOptions {
  readonly kind?: StoreKindUnderTest
  /** Keys of `auth` (e.g. `sso`, replacing the default clients), besides `issuer`. */
  readonly auth?: (origin: string, adminUrl: string) => Record<string, unknown>
  /** Other top-level keys (client_authorization, backends, …). */
  readonly patch?: Record<string, unknown>
  /** Keys of `admin` that name the admin listener's address (`public_url` in remote mode), besides `listen`. */
  readonly admin?: (adminUrl: string) => Record<string, unknown>
  /** Extra keys of `server` (e.g. `trusted_proxies`); `listen` and `public_url` are the test's. */
  readonly server?: Record<string, unknown>
  /** Collects the gateway's log lines (info and up) instead of keeping it quiet. */
  readonly logs?: LogCapture
  /** The public listener's port (default: a free one), e.g. to register the upstream callback first. */
  readonly port?: number
  /** Environment the configuration is read with (variables named by `*_env` keys). */
  readonly env?: Record<string, string>
  /**
   * Process-wide services added to the base layer's (a test stand-in for a service whose live layer
   * is not part of the branch yet, say); the routes find them like the base services.
   */
  readonly extraServices?: Layer.Layer<never>
  /** Managed tool sources (HTTP endpoints, tool groups) set on the loaded configuration, as composition would. */
  readonly sources?: ComposedSources
}

/** The loopback client that obtains Management API tokens (like `gateway-admin` in config/gateway.yaml). */
export const adminClient = (adminUrl: string) => ({
  id: "admin-cli",
  redirect_uris: ["http://127.0.0.1/callback"],
  resources: [adminUrl]
})

/**
 * Clients every test gateway registers: loopback any-port, loopback fixed port, exact https with two
 * resources (/mcp and the Management API), custom scheme.
 */
export const defaultClients = (origin: string, adminUrl: string) => [
  {
    id: "cli",
    redirect_uris: ["http://127.0.0.1/callback", "http://localhost/callback", "http://[::1]/callback"],
    resources: [`${origin}/mcp`]
  },
  { id: "fixed", redirect_uris: ["http://127.0.0.1:7777/cb"], resources: [`${origin}/mcp`] },
  {
    id: "web",
    redirect_uris: ["https://app.example.com/oauth/callback?tenant=1", "com.example.app:/oauth"],
    resources: [`${origin}/mcp`, adminUrl]
  },
  { id: "portal", redirect_uris: ["http://127.0.0.1/portal"], resources: [`${origin}/mcp`] }
]

// Quiet by default; GATEWAY_TEST_LOGS=1 shows everything when debugging.
export const oauthGateway = (options: OAuthGatewayOptions = {}): Effect.Effect<OAuthGateway, unknown, Scope.Scope> =>
  showLogs
    ? build(options).pipe(Effect.provide(Logger.pretty))
    : options.logs !== undefined
      ? options.logs.capture(build(options))
      : quietly(build(options))

const build = (options: OAuthGatewayOptions) =>
  Effect.gen(function* () {
    const port = options.port ?? (yield* Effect.promise(freePort))
    const adminPort = yield* Effect.promise(freePort)
    const dir = yield* withTempDir
    const storage = yield* withStorage(options.kind ?? "sqlite")
    const origin = `http://127.0.0.1:${port}`
    const adminUrl = `http://127.0.0.1:${adminPort}`
    const document = {
      server: { listen: `127.0.0.1:${port}`, public_url: `${origin}/mcp`, ...options.server },
      auth: {
        issuer: `${origin}/sso`,
        ...options.auth?.(origin, adminUrl),
        // Keys of `sso` the test gives replace the default's (clients included); the others stay.
        sso: {
          clients: [...defaultClients(origin, adminUrl), adminClient(adminUrl)],
          ...(options.auth?.(origin, adminUrl)["sso"] as object | undefined)
        }
      },
      storage: storage.type === "sqlite" ? storage : { type: "postgres", url: Redacted.value(storage.url) },
      ...options.patch,
      admin: {
        listen: `127.0.0.1:${adminPort}`,
        ...(options.patch?.["admin"] as object | undefined),
        ...options.admin?.(adminUrl)
      }
    }
    const parsed = parseConfig(join(dir, "gateway.yaml"), stringify(document), options.env ?? {})
    if (Either.isLeft(parsed)) return yield* Effect.dieMessage(parsed.left.message)
    const loaded = options.sources === undefined ? parsed.right : { ...parsed.right, sources: options.sources }
    const key = yield* parseConfigKey(randomBytes(32).toString("base64"))
    const base: Context.Context<BaseServices> = yield* Layer.build(
      Layer.merge(baseLayer(loaded.config, key), options.extraServices ?? Layer.empty)
    )
    yield* initAdmin({
      reset: false,
      resetPassword: true,
      resetMfa: false,
      password: Redacted.make(ADMIN_PASSWORD)
    }).pipe(Effect.provide(base))
    const listeners: Array<Listener> = []
    // Not inside acquireRelease: its acquire is uninterruptible, and the generation's workers forked there
    // would inherit that and never stop when the scope closes.
    const generations = yield* acquireGenerations({
      base,
      first: loaded,
      activate: (generation) => {
        for (const listener of listeners) listener.activate(generation)
      }
    })
    for (const [listenPort, route] of [
      [port, publicRoute],
      [adminPort, adminRoute]
    ] as const) {
      const listener = yield* Effect.acquireRelease(makeListener("127.0.0.1", listenPort, route), (each) =>
        Effect.sync(() => {
          each.stopAccepting()
          each.closeAll()
        })
      )
      listener.activate(generations.current())
      listeners.push(listener)
    }
    const gateway: OAuthGateway = {
      baseUrl: origin,
      adminUrl,
      issuer: `${origin}/sso`,
      mcpUrl: `${origin}/mcp`,
      loaded,
      base,
      generation: generations.current
    }
    return gateway
  })

/** Runs `effect` in the services of the generation serving now (AccessState, PolicyEngine, Backends, …). */
export const inGeneration =
  (gateway: OAuthGateway) =>
  <A, E>(effect: Effect.Effect<A, E, GenerationServices>): Effect.Effect<A, E> =>
    quietly(Effect.provide(effect, gateway.generation().context))

/** Runs `effect` against the gateway's process-wide services (repositories, Signer, SessionGuard). */
export const inGateway =
  (gateway: OAuthGateway) =>
  <A, E>(effect: Effect.Effect<A, E, BaseServices>): Effect.Effect<A, E> =>
    quietly(Effect.provide(effect, gateway.base))
