import type { ConsoleRoute } from "./route.js"

/**
 * The path parameters of `path` under `pattern` (`/console/identities/:id`), percent-decoded; undefined
 * when it does not match. A parameter is one non-empty segment.
 */
export const matchPath = (pattern: string, path: string): Record<string, string> | undefined => {
  const expected = pattern.split("/")
  const actual = path.split("/")
  if (expected.length !== actual.length) return undefined
  const params: Record<string, string> = {}
  for (let index = 0; index < expected.length; index++) {
    const want = expected[index]!
    const got = actual[index]!
    if (want.startsWith(":")) {
      if (got === "") return undefined
      params[want.slice(1)] = decodeURIComponent(got)
    } else if (want !== got) {
      return undefined
    }
  }
  return params
}

/** Whether a route's path has parameters (the overview lists, the benchmark and axe visit only those without). */
export const hasParameters = (route: ConsoleRoute): boolean =>
  route.path.split("/").some((part) => part.startsWith(":"))

/** The routes at `path`, with their parameters: several when GET and POST share it. */
export const routesAt = (routes: ReadonlyArray<ConsoleRoute>, path: string) =>
  routes.flatMap((route) => {
    const params = matchPath(route.path, path)
    return params === undefined ? [] : [{ route, params }]
  })
