import { Effect } from "effect"
import { OpenApiInvalid } from "./errors.js"
import { isObject } from "./pointer.js"

/**
 * The base of an operation's URL: `server_url` when the import gives one, else `servers[0].url` of
 * `holder` (the operation, its path item or the document: the nearest that declares servers, `at` its
 * pointer) with its variables' defaults, resolved against the URL the document came from when it is
 * relative. An absolute http(s) URL without credentials, query or fragment; no trailing slash.
 * Whether plain http is allowed is the endpoint's `allow_insecure_http`, checked when the import is saved.
 */
export const serverBase = (
  holder: Record<string, unknown>,
  at: string,
  serverUrl: string | undefined,
  documentUrl: string | undefined
): Effect.Effect<string, OpenApiInvalid> =>
  Effect.gen(function* () {
    if (serverUrl !== undefined) return yield* absolute(serverUrl, undefined, "", "server_url")
    const servers = Array.isArray(holder.servers) ? holder.servers : []
    const first: unknown = servers[0]
    if (!isObject(first)) {
      if (documentUrl === undefined) {
        return yield* new OpenApiInvalid({
          pointer: `${at}/servers`,
          message: "the document names no server: give server_url"
        })
      }
      return yield* absolute("/", documentUrl, `${at}/servers`, "the document's default server")
    }
    const raw = typeof first.url === "string" ? first.url : ""
    const variables = isObject(first.variables) ? first.variables : {}
    let missing: string | undefined
    const substituted = raw.replace(/\{([^{}]*)\}/g, (_, name: string) => {
      const variable = variables[name]
      const value = isObject(variable) && typeof variable.default === "string" ? variable.default : undefined
      if (value === undefined) missing ??= name
      return value ?? ""
    })
    if (missing !== undefined) {
      return yield* new OpenApiInvalid({
        pointer: `${at}/servers/0/url`,
        message: `the server variable {${missing}} has no default`
      })
    }
    return yield* absolute(substituted, documentUrl, `${at}/servers/0/url`, "the server URL")
  })

const absolute = (
  text: string,
  documentUrl: string | undefined,
  pointer: string,
  what: string
): Effect.Effect<string, OpenApiInvalid> => {
  const refuse = (message: string) => Effect.fail(new OpenApiInvalid({ pointer, message: `${what} ${message}` }))
  let url: URL
  try {
    url = documentUrl === undefined ? new URL(text) : new URL(text, documentUrl)
  } catch {
    return documentUrl === undefined && !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)
      ? refuse("is relative: give server_url, or import the document from its URL")
      : refuse("is not a URL")
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return refuse("must be an https URL")
  if (url.username !== "" || url.password !== "") return refuse("may not hold credentials")
  if (url.search !== "" || url.hash !== "" || text.includes("?") || text.includes("#")) {
    return refuse("may not have a query or a fragment")
  }
  if (/[{}]/.test(url.href)) return refuse("holds an unresolved variable")
  return Effect.succeed(url.href.replace(/\/+$/, ""))
}
