import { HttpRouter } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import { Effect } from "effect"
import { HttpError } from "./error-body.js"

const methods: ReadonlyArray<HttpMethod> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

/**
 * Answers 405 with `Allow` for a served path called with another method, instead of a misleading 404.
 * `HEAD` is allowed wherever `GET` is: the router answers it from the GET route.
 */
export const otherMethods =
  (path: HttpRouter.PathInput, allow: ReadonlyArray<HttpMethod>) =>
  <E, R>(router: HttpRouter.HttpRouter<E, R>): HttpRouter.HttpRouter<E | HttpError, R> => {
    const allowed = allow.includes("GET") ? [...allow, "HEAD" as const] : allow
    const refusal = Effect.fail(
      new HttpError({
        status: 405,
        code: "method_not_allowed",
        description: `Use ${allowed.join(" or ")} on this path.`,
        headers: { allow: allowed.join(", ") }
      })
    )
    return methods
      .filter((method) => !allowed.includes(method))
      .reduce<HttpRouter.HttpRouter<E | HttpError, R>>(
        (routes, method) => HttpRouter.route(method)(path, refusal)(routes),
        router
      )
  }
