import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { clientAddress } from "../auth/client-address.js"
import type { GatewayConfig } from "../config/schema.js"
import { echo, SecurityLog } from "../events/security-log.js"
import { HttpError } from "./error-body.js"

export const originRefused = new HttpError({
  status: 403,
  code: "origin_not_allowed",
  description: "Requests from this Origin are not accepted (allowed_origins)."
})

/**
 * The security line of a refused Origin (`http.origin_refused`, at most 10 a minute per address), for
 * the routes of the Effect pipeline; /mcp's own handler writes the same line.
 */
export const originRefusedEvent = (path: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const address = yield* clientAddress
    yield* (yield* SecurityLog).limited(address, "http.origin_refused", {
      client_address: address,
      origin: echo(request.headers["origin"] ?? ""),
      path
    })
  })

/**
 * Origin rules of /mcp (DNS-rebinding protection and CORS). A request without `Origin` is not from a
 * browser and passes; a browser request passes when its origin is the public URL's own origin or one
 * of `allowed_origins`, compared exactly. `*` is never answered.
 */
export const originPolicy = (config: GatewayConfig): ((origin: string | undefined) => boolean) => {
  const own = new URL(config.server.public_url).origin
  const allowed = new Set(config.allowed_origins)
  return (origin) => origin === undefined || origin === own || allowed.has(origin)
}

export const originAllowed = (origin: string | undefined, config: GatewayConfig): boolean =>
  originPolicy(config)(origin)

/**
 * Headers a cross-origin script may read: the challenge, the id to quote in a support request, and the
 * session id that carries a 2025-era client's declared capabilities (docs/mcp.md, "Input requests").
 */
const exposed = "WWW-Authenticate, X-Request-Id, Mcp-Protocol-Version, Mcp-Session-Id"

/** Response headers for an allowed browser origin; none for non-browser requests. */
export const corsHeaders = (origin: string | undefined): Readonly<Record<string, string>> =>
  origin === undefined
    ? {}
    : { "access-control-allow-origin": origin, "access-control-expose-headers": exposed, vary: "Origin" }

/** The request headers the endpoint implements (MCP, auth, W3C trace context) plus declared `Mcp-Param-*` ones. */
export const allowedRequestHeaders = (paramHeaders: ReadonlyArray<string>): string =>
  [
    "Authorization",
    "Content-Type",
    "Accept",
    "Mcp-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Mcp-Session-Id",
    "traceparent",
    "tracestate",
    ...paramHeaders
  ].join(", ")

export const preflightHeaders = (origin: string, paramHeaders: ReadonlyArray<string>) => ({
  "access-control-allow-origin": origin,
  "access-control-allow-methods": "POST",
  "access-control-allow-headers": allowedRequestHeaders(paramHeaders),
  "access-control-max-age": "600",
  vary: "Origin"
})
