import { createServer, type Server } from "node:http"
import { Data, Effect } from "effect"
import { errorBodyText, HttpError } from "../http/error-body.js"
import type { Generation } from "./generation.js"

export class ListenError extends Data.TaggedError("ListenError")<{
  readonly address: string
  readonly reason: string
}> {
  override get message() {
    return `cannot listen on ${this.address}: ${this.reason}`
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

/** Which of a generation's handlers a listener serves: the public routes, or the Management API. */
export type Route = (generation: Generation) => Generation["handle"]

export const publicRoute: Route = (generation) => generation.handle
export const adminRoute: Route = (generation) => generation.handleAdmin

export const makeListener = (
  host: string,
  port: number,
  route: Route = publicRoute
): Effect.Effect<Listener, ListenError> =>
  Effect.async<Listener, ListenError>((resume) => {
    let current: Generation | undefined
    let accepting = true
    const server = createServer({ headersTimeout: 20_000, requestTimeout: 0, keepAliveTimeout: 5_000 })
    server.on("request", (request, response) => {
      if (!accepting || current === undefined) {
        response.shouldKeepAlive = false
        response.writeHead(503, {
          "content-type": "application/json",
          "cache-control": "no-store",
          connection: "close"
        })
        response.end(shuttingDownBody)
        return
      }
      if (isLivenessProbe(request.method, request.url)) {
        response.writeHead(200, healthzHeaders)
        response.end(request.method === "HEAD" ? undefined : healthzBody)
        return
      }
      route(current)(request, response)
    })
    const onError = (error: NodeJS.ErrnoException) =>
      resume(Effect.fail(new ListenError({ address: `${host}:${port}`, reason: error.code ?? error.message })))
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
