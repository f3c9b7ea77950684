import { createServer, type Server } from "node:http"
import { Data, Duration, Effect } from "effect"
import { errorBodyText, HttpError } from "../http/error-body.js"
import { repeatedHeader } from "../http/repeated-headers.js"
import { isMetricsRequest, serveMetrics, serveMetricsOnly } from "../observability/metrics-route.js"
import type { Generation } from "./build-generation.js"
import { ConnectionGate, closeIfAnsweredEarly } from "./connection-gate.js"

export class ListenError extends Data.TaggedError("ListenError")<{
  readonly address: string
  readonly reason: string
  /** The setting that names the address (`server.listen`, `admin.listen`). */
  readonly setting: string
}> {
  override get message() {
    const where = `cannot listen on ${this.address} (${this.setting})`
    if (this.reason === "EADDRINUSE") {
      return `${where}: the address is in use, most likely by another gateway or program; stop it, or choose another address in ${this.setting}`
    }
    if (this.reason === "EACCES") {
      return `${where}: permission denied (ports below 1024 need privileges); choose a port from 1024 up in ${this.setting}`
    }
    if (this.reason === "EADDRNOTAVAIL") {
      return `${where}: no interface of this machine has that address; choose one it has in ${this.setting}`
    }
    return `${where}: ${this.reason}`
  }
}

/**
 * The public listener. It lives for the whole process (`server.listen` is static) and hands each
 * request to the generation current at its arrival, so a reload never drops a connection.
 */
export interface Listener {
  readonly server: Server
  readonly port: number
  activate(generation: Generation): void
  /** Stops accepting connections; requests arriving on kept-alive connections get 503 and `Connection: close`. */
  stopAccepting(): void
  /** Closes every connection that is still open. */
  closeAll(): void
}

const shuttingDownBody = errorBodyText(
  new HttpError({ status: 503, code: "shutting_down", description: "The gateway is shutting down." })
)
const tooManyConnectionsBody = errorBodyText(
  new HttpError({
    status: 503,
    code: "too_many_connections",
    description: "The gateway has too many open connections; try again shortly."
  })
)
const repeatedBody = (name: string) =>
  errorBodyText(
    new HttpError({
      status: 400,
      code: "invalid_request",
      description: `The request carries the ${name} header more than once; send it once.`
    })
  )
const closingHeaders = { "content-type": "application/json", "cache-control": "no-store", connection: "close" }

/**
 * Node's own bound on receiving a whole request, past `request_timeout`: the request pipelines answer
 * 504 at `request_timeout`; this closes whatever is still arriving after that (a body nobody reads).
 */
const receiveBackstopMs = 5_000
/** Request headers arrive within this, or within `request_timeout` when that is shorter. */
const maxHeadersMs = 20_000

/**
 * Liveness is answered here, before the request pipeline: `/healthz` means "a runtime exists and this
 * process answers", so it must stay cheap and must not fail because the pipeline is saturated, slow or
 * past its request deadline. Other methods on /healthz still go through the routes (405).
 */
const healthzBody = JSON.stringify({ status: "ok" })
const healthzHeaders = {
  "content-type": "application/json",
  "content-length": String(Buffer.byteLength(healthzBody)),
  "cache-control": "no-store"
}
const isLivenessProbe = (method: string | undefined, url: string | undefined) =>
  (method === "GET" || method === "HEAD") && (url === "/healthz" || url?.startsWith("/healthz?") === true)
const isReadinessProbe = (method: string | undefined, url: string | undefined) =>
  (method === "GET" || method === "HEAD") && (url === "/readyz" || url?.startsWith("/readyz?") === true)

/** Which of a generation's handlers a listener serves: the public routes, or the Management API. */
export type Route = (generation: Generation) => Generation["handle"]

export const publicRoute: Route = (generation) => generation.handle
/** The admin listener (loopback): `/metrics` for the scraper, the Management API for everything else. */
export const adminRoute: Route = (generation) => (request, response) =>
  isMetricsRequest(request) ? serveMetrics(request, response) : generation.handleAdmin(request, response)
/** `observability.metrics_listen`: `/metrics` only. */
export const metricsRoute: Route = () => serveMetricsOnly

export const makeListener = (
  host: string,
  port: number,
  route: Route = publicRoute,
  setting = "server.listen"
): Effect.Effect<Listener, ListenError> =>
  Effect.async<Listener, ListenError>((resume) => {
    let current: Generation | undefined
    let accepting = true
    const gate = new ConnectionGate(Number.POSITIVE_INFINITY)
    // Headers must arrive within 20 s (or request_timeout) and a whole request within request_timeout
    // (+ the backstop); Node checks both every second rather than its default 30.
    const server = createServer({
      headersTimeout: maxHeadersMs,
      requestTimeout: 60_000 + receiveBackstopMs,
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: 1_000
    })
    server.on("connection", (socket) => gate.admit(socket))
    server.on("request", (request, response) => {
      if (!accepting || current === undefined) {
        response.shouldKeepAlive = false
        response.writeHead(503, closingHeaders)
        response.end(shuttingDownBody)
        return
      }
      if (isLivenessProbe(request.method, request.url)) {
        response.writeHead(200, healthzHeaders)
        response.end(request.method === "HEAD" ? undefined : healthzBody)
        return
      }
      if (gate.probesOnly(request.socket) && !isReadinessProbe(request.method, request.url)) {
        response.shouldKeepAlive = false
        response.writeHead(503, { ...closingHeaders, "retry-after": "1" })
        response.end(tooManyConnectionsBody)
        return
      }
      const repeated = repeatedHeader(request.rawHeaders)
      if (repeated !== undefined) {
        // The body is not read: the connection closes after the answer.
        const body = repeatedBody(repeated)
        response.shouldKeepAlive = false
        response.writeHead(400, { ...closingHeaders, "content-length": String(Buffer.byteLength(body)) })
        response.end(body)
        return
      }
      closeIfAnsweredEarly(request, response)
      route(current)(request, response)
    })
    const onError = (error: NodeJS.ErrnoException) =>
      resume(Effect.fail(new ListenError({ address: `${host}:${port}`, reason: error.code ?? error.message, setting })))
    server.once("error", onError)
    server.listen(port, host, () => {
      server.off("error", onError)
      const address = server.address()
      resume(
        Effect.succeed({
          server,
          port: typeof address === "object" && address !== null ? address.port : port,
          activate: (generation) => {
            current = generation
            const { config } = generation.loaded
            gate.max = config.server.max_connections
            const requestTimeoutMs = Duration.toMillis(config.request_timeout)
            server.headersTimeout = Math.min(maxHeadersMs, requestTimeoutMs)
            server.requestTimeout = requestTimeoutMs + receiveBackstopMs
          },
          stopAccepting: () => {
            accepting = false
            server.close()
            server.closeIdleConnections()
          },
          closeAll: () => server.closeAllConnections()
        })
      )
    })
  })
