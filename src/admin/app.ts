import type { IncomingMessage, ServerResponse } from "node:http"
import {
  FileSystem,
  HttpApiBuilder,
  type HttpApp,
  HttpIncomingMessage,
  HttpMiddleware,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Option, type Scope } from "effect"
import { Config } from "../config/service.js"
import type { SecurityLog } from "../events/security-log.js"
import { HttpError } from "../http/error-body.js"
import { runInGeneration, withRequestContext } from "../http/middleware.js"
import { originRefusedEvent } from "../http/origin.js"
import type { GenerationServices } from "../runtime/generation-layer.js"
import type { RequestsInFlight } from "../runtime/requests-in-flight.js"
import { hasControlCharacter } from "../text.js"
import { ManagementApi, openApiPath } from "./api.js"
import { ApprovalDeliveryLive } from "./approval-delivery.js"
import { AuditEventsLive } from "./audit-events.js"
import { AdminAuthLive, DeliveryAuthLive } from "./auth.js"
import { MAX_BODY_BYTES } from "./body.js"
import { isConsolePath, makeConsoleApp } from "./console/app.js"
import { DirectoryLive } from "./directory.js"
import { IdentitiesLive } from "./identities.js"
import { IdentityProvidersLive } from "./identity-providers.js"
import { LocalAccountsLive } from "./local-accounts.js"
import { methodChecked } from "./methods.js"
import { adminResource } from "./resource.js"
import { BackendsLive, HttpToolsLive, OpenApiImportsLive, ToolGroupsLive, ToolSourcesLive } from "./sources.js"
import { GenerationId, generationIdLayer, StatusLive } from "./status.js"

const originRefused = new HttpError({
  status: 403,
  code: "origin_not_allowed",
  description: "The Management API answers only its own origin."
})

/**
 * Browsers may not drive the API from another origin (docs/management-api.md, "Authentication"): a request
 * carrying an `Origin` other than the admin listener's own is refused before anything else. Requests
 * without one (curl, the CLI) pass; no CORS headers are ever sent.
 */
const originChecked =
  (adminOrigin: string) =>
  <E, R>(
    app: HttpApp.Default<E, R>
  ): HttpApp.Default<E | HttpError, R | HttpServerRequest.HttpServerRequest | Config | SecurityLog> =>
    Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request): HttpApp.Default<E | HttpError, R | HttpServerRequest.HttpServerRequest | Config | SecurityLog> => {
        const origin = request.headers["origin"]
        if (origin === undefined || origin === adminOrigin) return app
        return Effect.zipRight(originRefusedEvent("/api"), Effect.fail(originRefused))
      }
    )

const badAddress = (description: string) => new HttpError({ status: 400, code: "invalid_request", description })

/**
 * No control character in the request's path or query, once decoded: no id, cursor or name holds one,
 * and U+0000 would reach PostgreSQL (which cannot store it) as a 500. Refused before routing, for
 * every endpoint alike; bodies are checked as they are read (src/admin/body.ts).
 */
const addressChecked = <E, R>(
  app: HttpApp.Default<E, R>
): HttpApp.Default<E | HttpError, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<E | HttpError, R> => {
    let decoded: string
    try {
      decoded = decodeURIComponent(request.url)
    } catch {
      return Effect.fail(badAddress("The request's path or query is not valid percent-encoding."))
    }
    return hasControlCharacter(decoded)
      ? Effect.fail(badAddress("The request's path or query holds a control character."))
      : app
  })

/**
 * RFC 6750 §3: a 401 names the scheme, so a client knows to send a bearer token. And no answer of the
 * API is kept by a cache on the way: some carry what only their caller may see once (an enrolment
 * link, docs/local-accounts.md), all describe who may do what.
 */
const challenged = HttpMiddleware.make((app) =>
  Effect.map(app, (response) => {
    const stored = HttpServerResponse.setHeader(response, "cache-control", "no-store")
    return response.status === 401
      ? HttpServerResponse.setHeader(stored, "www-authenticate", 'Bearer realm="gateway-admin"')
      : stored
  })
)

/**
 * The Management API and the console (docs/console.md, under `/console`) of one generation, as a Node
 * request handler for the admin listener (docs/management-api.md): the HttpApi definition (src/admin/api.ts) with its handlers, the generated
 * OpenAPI document at `/api/v1/openapi.json`, and the same request pipeline as the public routes
 * (request id, access log, the one error body, `request_timeout`, generation-bound cancellation).
 * Built on the first admin request, in the generation's scope.
 */
export const makeAdminHandler = (
  context: Context.Context<GenerationServices>,
  requests: RequestsInFlight,
  generationId: number
) =>
  Effect.gen(function* () {
    const { config } = Context.get(context, Config)
    const services = Layer.succeedContext(context)
    const api = HttpApiBuilder.api(ManagementApi).pipe(
      Layer.provide(IdentitiesLive),
      Layer.provide(LocalAccountsLive),
      Layer.provide(IdentityProvidersLive),
      Layer.provide(DirectoryLive),
      Layer.provide(ApprovalDeliveryLive),
      Layer.provide(AuditEventsLive),
      Layer.provide(Layer.mergeAll(BackendsLive, HttpToolsLive, OpenApiImportsLive, ToolGroupsLive, ToolSourcesLive)),
      Layer.provide(StatusLive.pipe(Layer.provide(generationIdLayer(generationId)))),
      Layer.provide(Layer.merge(AdminAuthLive, DeliveryAuthLive)),
      Layer.provide(services)
    )
    const built = yield* Layer.build(
      Layer.mergeAll(HttpApiBuilder.middlewareOpenApi({ path: openApiPath }), HttpApiBuilder.Router.Live).pipe(
        Layer.provideMerge(api),
        Layer.provideMerge(HttpApiBuilder.Middleware.layer)
      )
    )
    const apiApp = yield* Effect.provide(HttpApiBuilder.httpApp, built)
    const consoleApp = yield* Effect.provide(makeConsoleApp, Context.add(context, GenerationId, generationId))
    const managementApi = challenged(originChecked(adminResource(config))(addressChecked(methodChecked(apiApp))))
    // `/console` is the console's (its own origin, CSRF and session checks, HTML answers); the rest the API's.
    const routed = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      isConsolePath(new URL(request.url, "http://admin.invalid").pathname) ? consoleApp : managementApi
    )
    const app = withRequestContext(config.log_level === "debug")(
      runInGeneration(requests, config.request_timeout)(routed)
    )
    return yield* NodeHttpServer.makeHandler(app).pipe(
      Effect.provide(
        Context.add(context, HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(MAX_BODY_BYTES)))
      ),
      Effect.provide(NodeHttpServer.layerContext)
    )
  }) satisfies Effect.Effect<(request: IncomingMessage, response: ServerResponse) => void, unknown, Scope.Scope>
