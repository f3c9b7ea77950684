import type { IncomingMessage, ServerResponse } from "node:http"
import { FileSystem, HttpIncomingMessage, HttpMiddleware, HttpRouter } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Duration, Effect, Exit, Layer, Option, Runtime, Scope } from "effect"
import { resourceMetadataRoutes } from "../bearer/resource-metadata-route.js"
import type { LoadedConfig } from "../config/service.js"
import { runInGeneration, withRequestContext } from "../http/middleware.js"
import { routes } from "../http/routes.js"
import type { BackendCatalog } from "../mcp/catalog/backend-catalog.js"
import { McpPost } from "../mcp/edge/post.js"
import { mcpRoutes } from "../mcp/edge/route.js"
import { Backends } from "../mcp/upstream/backends.js"
import type { BackendSlot } from "../mcp/upstream/slot.js"
import { composeSources, type SourceOverlay } from "../sources/compose.js"
import {
  type BaseServices,
  type GenerationOverrides,
  type GenerationServices,
  generationLayer
} from "./generation-layer.js"
import { GenerationRequests, RequestsInFlight } from "./requests-in-flight.js"

/** Extra routes a caller adds to every generation (the test harness adds a slow route this way). */
export type ExtraRoutes = HttpRouter.HttpRouter<never, GenerationServices>

/**
 * A generation: everything built from one validated configuration, held by one Scope. Closing the
 * scope interrupts its request fibers and releases its resources (docs/operations.md, "Generations and
 * reload").
 */
export interface Generation {
  readonly id: number
  readonly loaded: LoadedConfig
  /** Its services (tests run a route's effect in them; src/admin builds the Management API from them). */
  readonly context: Context.Context<GenerationServices>
  readonly handle: (request: IncomingMessage, response: ServerResponse) => void
  /** The Management API (admin listener); built on its first request (src/admin/app.ts). */
  readonly handleAdmin: (request: IncomingMessage, response: ServerResponse) => void
  /** The requests it is serving: the drain waits for them, closing cancels them. */
  readonly requests: RequestsInFlight
  /** Backend catalogs the next generation may inherit (docs/mcp.md, "Backends"), by catalog-source identity. */
  readonly catalogs: () => ReadonlyMap<string, BackendCatalog>
  /** Its backends' live state (read by the metrics and the health status). */
  readonly slots: ReadonlyArray<BackendSlot>
  readonly close: Effect.Effect<void>
}

// Bodies the gateway reads are small JSON documents; routes that need more raise it locally.
const defaultMaxBody = Option.some(FileSystem.Size(1024 * 1024))

export const buildGeneration = (
  id: number,
  given: LoadedConfig,
  base: Context.Context<BaseServices>,
  extraRoutes?: ExtraRoutes,
  previous?: ReadonlyMap<string, BackendCatalog>,
  overrides?: GenerationOverrides,
  overlay?: SourceOverlay
): Effect.Effect<Generation, unknown> =>
  Effect.gen(function* () {
    // Every generation — the first, a SIGHUP's, an applied change's — is the YAML it was given plus the
    // database's managed tool sources (docs/tool-sources.md).
    const loaded = yield* composeSources(given, overlay).pipe(Effect.provide(base))
    const scope = yield* Scope.make()
    const requests = new RequestsInFlight()
    const built = yield* Effect.gen(function* () {
      const context = yield* Layer.buildWithScope(
        generationLayer(loaded, previous, overrides).pipe(
          Layer.provideMerge(Layer.succeed(GenerationRequests, requests)),
          Layer.provideMerge(Layer.succeedContext(base))
        ),
        scope
      )
      const publicUrl = loaded.config.server.public_url
      const served = routes.pipe(
        HttpRouter.concat(mcpRoutes(publicUrl)),
        HttpRouter.concat(resourceMetadataRoutes(publicUrl))
      )
      const router = extraRoutes === undefined ? served : HttpRouter.concat(served, extraRoutes)
      // The router's lookup table is built once per generation, not per request.
      const routerApp = yield* HttpRouter.toHttpApp(router)
      const app = withRequestContext(
        loaded.config.log_level === "debug",
        new URL(publicUrl).pathname
      )(runInGeneration(requests, loaded.config.request_timeout)(routerApp))
      // These settings are captured in the handler's runtime once, instead of being set on every request.
      // No trace exporter exists, so spans would be built and dropped on every request; the platform's
      // tracer middleware wraps the app from outside and, unless disabled, still parses the URL and copies
      // every header into span attributes per request, tracer or not.
      const handler = yield* NodeHttpServer.makeHandler(app).pipe(
        Effect.provide(Context.add(context, HttpIncomingMessage.MaxBodySize, defaultMaxBody)),
        Effect.withTracerEnabled(false),
        Effect.locally(HttpMiddleware.currentTracerDisabledWhen, () => true)
      )
      return {
        handler,
        context,
        backends: Context.get(context, Backends),
        mcpPost: Context.get(context, McpPost).handle
      }
    }).pipe(Effect.onExit((exit) => (Exit.isFailure(exit) ? Scope.close(scope, exit) : Effect.void)))
    // The Management API's code is loaded and its handler built on the first admin request: a gateway
    // that never serves one pays nothing for it at start-up.
    // The builder's runtime, so the API runs on the same services (clock included) as the routes.
    const runtime = yield* Effect.runtime<never>()
    let adminHandler: Promise<(request: IncomingMessage, response: ServerResponse) => void> | undefined
    const admin = () => {
      adminHandler ??= Runtime.runPromise(runtime)(
        Effect.promise(() => import("../admin/app.js")).pipe(
          Effect.flatMap(({ makeAdminHandler }) => makeAdminHandler(built.context, requests, id)),
          Scope.extend(scope)
        )
      )
      return adminHandler
    }
    const mcpPath = new URL(loaded.config.server.public_url).pathname
    // POST /mcp bypasses the Effect router: it is the hot path (src/mcp/edge/post.ts).
    const isMcpPost = (request: IncomingMessage) => {
      if (request.method !== "POST") return false
      const url = request.url ?? ""
      return url === mcpPath || (url.startsWith(mcpPath) && url.charCodeAt(mcpPath.length) === 63) // "?"
    }
    return {
      id,
      loaded,
      context: built.context,
      requests,
      handle: (request: IncomingMessage, response: ServerResponse) => {
        requests.add(request, response)
        if (isMcpPost(request)) built.mcpPost(request, response)
        else built.handler(request, response)
      },
      handleAdmin: (request: IncomingMessage, response: ServerResponse) => {
        requests.add(request, response)
        admin().then(
          (handler) => handler(request, response),
          () => {
            if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" })
            response.end(
              JSON.stringify({ error: "internal_error", error_description: "The Management API could not start." })
            )
          }
        )
      },
      catalogs: () => built.backends.inheritable(),
      slots: built.backends.slots,
      close: Scope.close(scope, Exit.void)
    }
  }).pipe(Effect.withSpan("Generation.build"))

/** Waits until the generation has no request in flight, or the timeout passes; true when idle. */
export const waitIdle = (generation: Generation, timeout: Duration.Duration): Effect.Effect<boolean> =>
  Effect.promise(() => generation.requests.whenIdle()).pipe(
    Effect.timeoutTo({ duration: timeout, onTimeout: () => false, onSuccess: () => true })
  )

/** How long cancelled requests have to write their 503 before their connections are closed. */
const cancelGrace = Duration.seconds(1)

/**
 * Ends a generation: its requests still in flight are cancelled (those not yet answered answer 503),
 * given a short grace to write that, and what is still open (a response already streaming) is closed;
 * then its scope closes, which stops its workers and closes its backend clients. The number cancelled.
 */
export const closeGeneration = (generation: Generation): Effect.Effect<number> =>
  Effect.gen(function* () {
    const cancelled = generation.requests.cancelAll()
    yield* waitIdle(generation, cancelGrace)
    generation.requests.destroyAll()
    yield* generation.close
    return cancelled
  })
