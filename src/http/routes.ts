import { HttpRouter } from "@effect/platform"
import { ssoRouter } from "../auth/routes.js"
import { configReviewRouter } from "../sources/review/routes.js"
import { healthz, readyz } from "./health.js"
import { jwks, jwksPath } from "./jwks.js"
import { otherMethods } from "./methods.js"

/** The public listener's routes for one generation; anything else is 404 (docs/errors.md). */
export const routes = HttpRouter.empty.pipe(
  healthz,
  readyz,
  jwks,
  otherMethods("/healthz", ["GET"]),
  otherMethods("/readyz", ["GET"]),
  otherMethods(jwksPath, ["GET"]),
  HttpRouter.concat(ssoRouter),
  HttpRouter.concat(configReviewRouter)
)
