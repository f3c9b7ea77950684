import { HttpRouter } from "@effect/platform"
import { builtinOnly } from "../../auth/routes.js"
import { otherMethods } from "../../http/methods.js"
import {
  approveEndpoint,
  listEndpoint,
  loginEndpoint,
  proposalEndpoint,
  rejectEndpoint,
  stepUpEndpoint
} from "./endpoints.js"
import { reviewPaths } from "./paths.js"

/**
 * The configuration review's routes on the public listener (docs/tool-sources.md, "Configuration
 * review"), mounted once by `src/http/routes.ts`. They sign in through the built-in authorization
 * server, so in `external` mode they are 404 like its own paths.
 */
export const configReviewRouter = HttpRouter.empty.pipe(
  HttpRouter.get(reviewPaths.login, builtinOnly(loginEndpoint)),
  HttpRouter.get(reviewPaths.list, builtinOnly(listEndpoint)),
  HttpRouter.get(reviewPaths.proposal, builtinOnly(proposalEndpoint)),
  HttpRouter.post(reviewPaths.approve, builtinOnly(approveEndpoint)),
  HttpRouter.post(reviewPaths.reject, builtinOnly(rejectEndpoint)),
  HttpRouter.get(reviewPaths.stepUp, builtinOnly(stepUpEndpoint)),
  otherMethods(reviewPaths.login, ["GET"]),
  otherMethods(reviewPaths.list, ["GET"]),
  otherMethods(reviewPaths.proposal, ["GET"]),
  otherMethods(reviewPaths.approve, ["POST"]),
  otherMethods(reviewPaths.reject, ["POST"]),
  otherMethods(reviewPaths.stepUp, ["GET"])
)
