import type { IncomingMessage, ServerResponse } from "node:http"
import { errorBodyText, HttpError } from "../http/error-body.js"
import { metrics } from "./metrics.js"

/** `GET /metrics` (and HEAD), with or without a query: what Prometheus scrapes. */
export const isMetricsRequest = (request: IncomingMessage): boolean => {
  if (request.method !== "GET" && request.method !== "HEAD") return false
  const url = request.url ?? ""
  return url === "/metrics" || url.startsWith("/metrics?")
}

const failedBody = errorBodyText(
  new HttpError({ status: 500, code: "internal_error", description: "The metrics could not be collected." })
)

/**
 * Answers a scrape in the Prometheus text format (docs/operations.md, "Metrics"). Only internal listeners
 * call this — the loopback admin listener and `observability.metrics_listen` — never the public one.
 */
export const serveMetrics = (request: IncomingMessage, response: ServerResponse): void => {
  metrics.exposition().then(
    (text) => {
      response.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" })
      response.end(request.method === "HEAD" ? undefined : text)
    },
    () => {
      response.writeHead(500, { "content-type": "application/json", "cache-control": "no-store" })
      response.end(failedBody)
    }
  )
}

const notFoundBody = errorBodyText(
  new HttpError({ status: 404, code: "not_found", description: "This listener serves GET /metrics only." })
)

/** `observability.metrics_listen`'s handler: /metrics, and 404 for anything else. */
export const serveMetricsOnly = (request: IncomingMessage, response: ServerResponse): void => {
  if (isMetricsRequest(request)) {
    serveMetrics(request, response)
    return
  }
  response.writeHead(404, { "content-type": "application/json", "cache-control": "no-store" })
  response.end(notFoundBody)
}
