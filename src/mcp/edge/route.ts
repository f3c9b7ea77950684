import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { mcpPath } from "../../bearer/resource-metadata.js"
import { Config } from "../../config/service.js"
import { HttpError } from "../../http/error-body.js"
import { originAllowed, originRefused, originRefusedEvent, preflightHeaders } from "../../http/origin.js"
import { Backends } from "../upstream/backends.js"

const preflight = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { config } = yield* Config
  const origin = request.headers["origin"]
  if (origin === undefined || !originAllowed(origin, config)) {
    if (origin !== undefined) yield* originRefusedEvent("/mcp")
    return yield* originRefused
  }
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

/**
 * The CORS preflight of /mcp and 405 for every method but POST (docs/mcp.md, "Protocol"). POST itself
 * never reaches the router: the generation hands it to the McpPost handler (src/mcp/edge/post.ts).
 */
export const mcpRoutes = (publicUrl: string) => {
  const path = mcpPath(publicUrl) as HttpRouter.PathInput
  return HttpRouter.empty.pipe(
    HttpRouter.options(path, preflight),
    HttpRouter.get(path, postOnly),
    HttpRouter.del(path, postOnly),
    HttpRouter.put(path, postOnly),
    HttpRouter.patch(path, postOnly)
  )
}
