import { type HttpApp, HttpServerRequest } from "@effect/platform"
import { RouteNotFound } from "@effect/platform/HttpServerError"
import { Effect } from "effect"
import { HttpError } from "../http/error-body.js"
import { ManagementApi, openApiPath } from "./api.js"

interface Route {
  readonly method: string
  readonly segments: ReadonlyArray<string>
}

// Every endpoint of the API's definition, and its OpenAPI document: the paths the API serves.
const routes: ReadonlyArray<Route> = [
  ...Object.values(ManagementApi.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, segments: endpoint.path.split("/") }))
  ),
  { method: "GET", segments: openApiPath.split("/") }
]

/**
 * `pathname` as the router matches it: percent-decoded, repeated slashes as one, no trailing slash,
 * nothing from a `;` on (static segments are then compared ignoring case, as the router does).
 */
const routerPath = (pathname: string): string => {
  let path = pathname.split(";", 1)[0]!.replace(/\/{2,}/g, "/")
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

/**
 * The methods the API answers on `pathname`, the most specific routes first as the router picks them
 * (`/identities/groups` is the groups' path, not an identity named "groups"); empty for a path it does
 * not serve. `HEAD` wherever `GET` is.
 */
export const allowedMethods = (pathname: string): ReadonlyArray<string> => {
  const parts = routerPath(pathname).split("/")
  let best = -1
  let methods: Array<string> = []
  for (const route of routes) {
    if (route.segments.length !== parts.length) continue
    let fixed = 0
    const matches = route.segments.every((segment, index) => {
      if (segment.startsWith(":")) return parts[index] !== ""
      fixed += 1
      return segment.toLowerCase() === parts[index]!.toLowerCase()
    })
    if (!matches || fixed < best) continue
    if (fixed > best) {
      best = fixed
      methods = []
    }
    if (!methods.includes(route.method)) methods.push(route.method)
  }
  if (methods.includes("GET")) methods.push("HEAD")
  return methods
}

/**
 * A path the API serves, called with another method: `405 method_not_allowed` with `Allow`, instead of
 * the 404 "No such path" the router answers (docs/management-api.md, "Errors").
 */
export const methodChecked = <E, R>(
  app: HttpApp.Default<E, R>
): HttpApp.Default<E | HttpError, R | HttpServerRequest.HttpServerRequest> =>
  Effect.catchIf(
    app,
    (error): error is E & RouteNotFound => error instanceof RouteNotFound,
    (notFound) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<never, E | HttpError> => {
        const allowed = allowedMethods(new URL(request.url, "http://admin.invalid").pathname)
        if (allowed.length === 0) return Effect.fail(notFound)
        return Effect.fail(
          new HttpError({
            status: 405,
            code: "method_not_allowed",
            description: `${request.method} is not answered on this path; use ${allowed.join(" or ")}.`,
            headers: { allow: allowed.join(", ") }
          })
        )
      })
  )
