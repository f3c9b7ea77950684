import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Config } from "../config/service.js"
import { otherMethods } from "../http/methods.js"
import { corsHeaders, originAllowed } from "../http/origin.js"
import { metadataPath, metadataPrefix, protectedResourceMetadata } from "./resource-metadata.js"

/**
 * `GET /.well-known/oauth-protected-resource/<path of public_url>` and its root alias. Readable
 * cross-origin by the same origins as /mcp, since a browser client reads it before its first call.
 */
const document = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { config, sources } = yield* Config
  const origin = request.headers["origin"]
  const cors = originAllowed(origin, config) ? corsHeaders(origin) : {}
  return HttpServerResponse.unsafeJson(protectedResourceMetadata(config, sources), {
    headers: { "cache-control": "public, max-age=300", ...cors }
  })
})

export const resourceMetadataRoutes = (publicUrl: string) => {
  const pathAware = metadataPath(publicUrl)
  const root = HttpRouter.empty.pipe(HttpRouter.get(metadataPrefix, document), otherMethods(metadataPrefix, ["GET"]))
  if (pathAware === metadataPrefix) return root
  const path = pathAware as HttpRouter.PathInput
  return root.pipe(HttpRouter.get(path, document), otherMethods(path, ["GET"]))
}
