import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Clock, Context, Effect, Either, Exit, Layer, Scope } from "effect"
import { stringify } from "yaml"
import { SessionGuard } from "../../src/bearer/caller.js"
import { ExternalJwksTiming, type ExternalJwksTimingShape } from "../../src/bearer/external-jwks.js"
import { parseConfig } from "../../src/config/load.js"
import type { LoadedConfig } from "../../src/config/service.js"
import { parseConfigKey } from "../../src/crypto/config-key.js"
import { Signer } from "../../src/crypto/signer.js"
import { type GatewayTool, GatewayTools } from "../../src/mcp/catalog/gateway-tools.js"
import { ReconnectTiming, type ReconnectTimingShape } from "../../src/mcp/upstream/slot.js"
import { metrics } from "../../src/observability/metrics.js"
import { baseLayer } from "../../src/runtime/base.js"
import type { BaseServices } from "../../src/runtime/generation-layer.js"
import { acquireGenerations } from "../../src/runtime/generations.js"
import { adminRoute, type Listener, makeListener } from "../../src/runtime/listener.js"
import { metricSources } from "../../src/runtime/metric-sources.js"
import type { HttpTools } from "../../src/sources/http/service.js"
import type { ComposedSources } from "../../src/sources/schema.js"
import { type LogCapture, quietly } from "./logs.js"
import { permitAllAccess } from "./permit-policy.js"
import { mintAccessToken, type TokenOptions, testSessionGuard } from "./tokens.js"

/**
 * An in-process gateway on a real loopback listener: the production generation (routes, backends,
 * verifier) without spawning a process. Faster than `startGateway`; use that one where signals matter.
 */
export interface TestGateway {
  readonly port: number
  readonly baseUrl: string
  readonly mcpUrl: string
  /** With `adminListener`: the loopback admin listener's origin (it serves `/metrics`, as in production). */
  readonly adminUrl: string | undefined
  readonly loaded: () => LoadedConfig
  token(options?: TokenOptions): Promise<string>
  /** Runs `effect` against the process-wide services (the store's policy writes, repositories). */
  run<A, E>(effect: Effect.Effect<A, E, BaseServices>): Promise<A>
  /**
   * Builds a generation from `patch` and swaps it in, as SIGHUP does (the same Generations service);
   * rejects (old one keeps serving) on failure. The old generation drains for its `drain_timeout`.
   */
  reload(patch: Record<string, unknown>): Promise<void>
  close(): Promise<void>
}

export interface TestGatewayOptions {
  /** Top-level YAML keys besides server/auth/storage (backends, allowed_origins, request_timeout, …). */
  readonly patch?: Record<string, unknown>
  /**
   * The SessionGuard: the test one (default, `true`), the store-backed one of the base layer (`false`),
   * or this one (e.g. a spy proving external mode never consults it).
   */
  readonly sessionGuard?: boolean | Context.Tag.Service<SessionGuard>
  /** Shorter external JWKS timings (cooldown, retries) than production's, so tests need not wait. */
  readonly externalJwksTiming?: Partial<ExternalJwksTimingShape>
  /** Backend reconnect timings (a backoff already at its cap, say) instead of production's. */
  readonly reconnectTiming?: Partial<ReconnectTimingShape>
  readonly auth?: Record<string, unknown>
  readonly publicPath?: string
  /**
   * The stored access policy: the permissive test double (default; test/support/permit-policy.ts) for
   * tests of the data plane, or `"store"`, the real one, for tests of the policy itself.
   */
  readonly policy?: "permit" | "store"
  /** Gateway-provided tools to register in every generation (src/mcp/catalog/gateway-tools.ts). */
  readonly gatewayTools?: ReadonlyArray<GatewayTool>
  /** `false`: every request takes the MCP SDK's path (to compare the two paths' answers). */
  readonly directPath?: boolean
  /** The generations' clock (test/support/shifted-clock.ts); the live one by default. */
  readonly clock?: Clock.Clock
  /** Collects the gateway's log lines (info and up) instead of keeping it quiet. */
  readonly logs?: LogCapture
  /** Environment the configuration is read with (variables named by `*_env` keys). */
  readonly env?: Record<string, string>
  /**
   * Managed tool sources every generation carries (HTTP endpoints, tool groups), set on the loaded
   * configuration as composition would (src/sources/compose.ts) — for tests of the catalog and calls.
   */
  readonly sources?: ComposedSources
  /** How HTTP tools' calls are sent (the generation's default answers "not available"). */
  readonly httpTools?: Layer.Layer<HttpTools>
  /** Also a loopback admin listener, serving `/metrics` (and the Management API) as the supervisor's does. */
  readonly adminListener?: boolean
}

export const startTestGateway = async (options: TestGatewayOptions = {}): Promise<TestGateway> => {
  // Bound first, on a port the kernel picks: nothing can take it between choosing and binding.
  const listener = await Effect.runPromise(makeListener("127.0.0.1", 0))
  const admin: Listener | undefined =
    options.adminListener === true
      ? await Effect.runPromise(makeListener("127.0.0.1", 0, adminRoute, "admin.listen"))
      : undefined
  const activate: Listener["activate"] = (generation) => {
    listener.activate(generation)
    admin?.activate(generation)
  }
  const port = listener.port
  const dir = mkdtempSync(join(tmpdir(), "gateway-mcp-"))
  const origin = `http://127.0.0.1:${port}`
  // A patch's `server` keys are added to the listener's own (which the test cannot know beforehand).
  const document = ({ server, ...patch }: Record<string, unknown>) => ({
    server: {
      listen: `127.0.0.1:${port}`,
      public_url: `${origin}${options.publicPath ?? "/mcp"}`,
      ...(server as Record<string, unknown> | undefined)
    },
    auth: { issuer: `${origin}/sso`, ...options.auth },
    storage: { type: "sqlite", path: join(dir, "gateway.db") },
    ...patch
  })
  const load = (patch: Record<string, unknown>) => {
    const parsed = parseConfig(join(dir, "gateway.yaml"), stringify(document(patch)), options.env ?? {})
    if (Either.isLeft(parsed)) throw new Error(parsed.left.message)
    return options.sources === undefined ? parsed.right : { ...parsed.right, sources: options.sources }
  }
  const scope = Effect.runSync(Scope.make())
  const key = Effect.runSync(parseConfigKey(randomBytes(32).toString("base64")))
  let loaded = load(options.patch ?? {})
  const guard = options.sessionGuard ?? true
  const timing = Layer.succeed(ExternalJwksTiming, {
    ...ExternalJwksTiming.defaultValue(),
    ...options.externalJwksTiming
  })
  const baseLayers = Layer.mergeAll(
    baseLayer(loaded.config, key),
    guard === true ? testSessionGuard : guard === false ? Layer.empty : Layer.succeed(SessionGuard, guard),
    timing,
    Layer.succeed(ReconnectTiming, { ...ReconnectTiming.defaultValue(), ...options.reconnectTiming }),
    options.policy === "store" ? Layer.empty : permitAllAccess
  )
  const overrides = {
    ...(options.gatewayTools === undefined ? {} : { gatewayTools: Layer.succeed(GatewayTools, options.gatewayTools) }),
    ...(options.directPath === undefined ? {} : { directPath: options.directPath }),
    ...(options.httpTools === undefined ? {} : { httpTools: options.httpTools })
  }
  const started = Effect.gen(function* () {
    const base = yield* Layer.buildWithScope(baseLayers, scope)
    const generations = yield* Scope.extend(
      acquireGenerations({ base, first: loaded, activate, overrides }),
      scope
    ).pipe(options.clock === undefined ? (effect) => effect : Effect.withClock(options.clock))
    if (admin !== undefined) metrics.setSources(metricSources(base, generations))
    return { base, generations }
  })
  const { base, generations } = await Effect.runPromise(
    options.logs === undefined ? quietly(started) : options.logs.capture(started)
  ).catch(async (error: unknown) => {
    // A gateway that did not start releases what it had: the listener, the store, the directory.
    for (const each of [listener, admin]) {
      each?.stopAccepting()
      each?.closeAll()
    }
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(dir, { recursive: true, force: true })
    throw error
  })
  const signer = Context.get(base, Signer)
  return {
    port,
    baseUrl: origin,
    mcpUrl: loaded.config.server.public_url,
    adminUrl: admin === undefined ? undefined : `http://127.0.0.1:${admin.port}`,
    loaded: () => loaded,
    token: (tokenOptions) => mintAccessToken(signer, loaded.config, tokenOptions),
    run: (effect) => Effect.runPromise(quietly(Effect.provide(effect, base))),
    reload: async (patch) => {
      const candidate = load(patch)
      await Effect.runPromise(quietly(generations.reload(candidate)))
      loaded = candidate
    },
    close: async () => {
      for (const each of [listener, admin]) {
        each?.stopAccepting()
        each?.closeAll()
      }
      await Effect.runPromise(Scope.close(scope, Exit.void))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
