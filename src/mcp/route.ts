import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { isJsonContentType } from "@modelcontextprotocol/server"
import { Duration, Effect } from "effect"
import { BearerVerifier } from "../auth/bearer.js"
import { insufficientScope } from "../auth/bearer-challenge.js"
import { mcpPath, metadataUrl } from "../auth/resource-metadata.js"
import { Config } from "../config/service.js"
import { HttpError } from "../http/error-body.js"
import { Backends } from "./backends.js"
import { missingScopes } from "./catalog-filter.js"
import { McpEndpoint } from "./endpoint.js"
import { corsHeaders, originAllowed, preflightHeaders } from "./origin.js"
import { parseMessage, readBody, unsupportedMediaType } from "./request-body.js"

// The handler's own deadline ends this much before request_timeout, so the caller gets the JSON-RPC
// timeout error (and the backend its cancellation) rather than the generic 504 of the HTTP layer.
const deadlineMargin = Duration.millis(25)

const originRefused = new HttpError({
  status: 403,
  code: "origin_not_allowed",
  description: "Requests from this Origin are not accepted (allowed_origins)."
})

const withHeaders = (headers: Readonly<Record<string, string>>) => (error: unknown) =>
  error instanceof HttpError ? new HttpError({ ...error, headers: { ...error.headers, ...headers } }) : error

/**
 * The request's cancellation, handed to the SDK as the web Request's signal: it fires when the request
 * fiber is interrupted (deadline, generation closing) and when the client disconnects before the response
 * is complete. The socket is watched directly because a streamed (SSE) answer outlives the fiber's wait
 * for the handler, and a disconnect must still cancel the backend call then, which is exactly when
 * 2026-07-28 clients cancel (they close the request). One controller rather than `AbortSignal.any`,
 * which costs several times more per request on Node 20.
 */
const cancellation = (request: HttpServerRequest.HttpServerRequest, interrupted: AbortSignal): AbortSignal => {
  const controller = new AbortController()
  const abort = () => controller.abort()
  interrupted.addEventListener("abort", abort, { once: true })
  const response = NodeHttpServerRequest.toServerResponse(request)
  response.once("close", () => {
    if (!response.writableFinished) abort()
  })
  return controller.signal
}

// Credentials stay out of what the SDK sees: handlers get the caller through the grant, never the token.
const withheldHeaders = new Set(["authorization", "cookie"])

/** The request headers handed to the SDK: all but the credentials. */
export const sdkRequestHeaders = (headers: Readonly<Record<string, string>>): Headers => {
  const result = new Headers()
  for (const name in headers) if (!withheldHeaders.has(name)) result.set(name, headers[name]!)
  return result
}

/**
 * A JSON answer is complete when the SDK returns it: it is sent in one write with its length. Only an
 * SSE answer (progress before the result, `subscriptions/listen`) is streamed.
 */
const toServerResponse = (response: Response, cors: Readonly<Record<string, string>>) => {
  const type = response.headers.get("content-type") ?? ""
  if (response.body === null || type.startsWith("text/event-stream")) {
    return Effect.succeed(HttpServerResponse.setHeaders(HttpServerResponse.fromWeb(response), cors))
  }
  return Effect.map(
    Effect.promise(() => response.arrayBuffer()),
    (body) =>
      HttpServerResponse.uint8Array(new Uint8Array(body), {
        status: response.status,
        headers: { ...Object.fromEntries(response.headers), ...cors }
      })
  )
}

const post = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { config } = yield* Config
  const origin = request.headers["origin"]
  if (!originAllowed(origin, config)) return yield* originRefused
  const cors = corsHeaders(origin)
  return yield* Effect.gen(function* () {
    const started = Date.now()
    const caller = yield* (yield* BearerVerifier).verify(request.headers["authorization"])
    const lacking = missingScopes(caller, config.backends)
    if (lacking !== undefined) return yield* insufficientScope(metadataUrl(config.server.public_url), lacking)
    if (!isJsonContentType(request.headers["content-type"] ?? null)) return yield* unsupportedMediaType
    const parsed = parseMessage(yield* readBody(request))
    if (parsed._tag === "Rejected") return HttpServerResponse.setHeaders(parsed.response, cors)
    const endpoint = yield* McpEndpoint
    const deadline =
      started + Math.max(1, Duration.toMillis(config.request_timeout) - Duration.toMillis(deadlineMargin))
    const response = yield* Effect.promise((interrupted) =>
      endpoint.serve(
        new Request(config.server.public_url, {
          method: "POST",
          headers: sdkRequestHeaders(request.headers),
          signal: cancellation(request, interrupted)
        }),
        parsed.message,
        { caller, deadline }
      )
    )
    return yield* toServerResponse(response, cors)
  }).pipe(Effect.mapError(withHeaders(cors)))
})

const preflight = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { config } = yield* Config
  const origin = request.headers["origin"]
  if (origin === undefined || !originAllowed(origin, config)) return yield* originRefused
  const { paramHeaders } = (yield* Backends).index()
  return HttpServerResponse.empty({ status: 204, headers: preflightHeaders(origin, paramHeaders) })
})

const postOnly = Effect.fail(
  new HttpError({
    status: 405,
    code: "method_not_allowed",
    description: "This endpoint is stateless Streamable HTTP: use POST (no GET stream, no DELETE session).",
    headers: { allow: "POST" }
  })
)

/** `POST /mcp`, its CORS preflight, and 405 for every other method (spec: Endpoints → Public). */
export const mcpRoutes = (publicUrl: string) => {
  const path = mcpPath(publicUrl) as HttpRouter.PathInput
  return HttpRouter.empty.pipe(
    HttpRouter.post(path, post),
    HttpRouter.options(path, preflight),
    HttpRouter.get(path, postOnly),
    HttpRouter.del(path, postOnly),
    HttpRouter.put(path, postOnly),
    HttpRouter.patch(path, postOnly)
  )
}
