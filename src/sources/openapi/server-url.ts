import type { RefusalKit } from "./errors.js"
import type { PointerKit } from "./pointer.js"

/**
 * The base of an operation's URL: `server_url` when the import gives one, else `servers[0].url` of
 * `holder` (the operation, its path item or the document: the nearest that declares servers, `at` its
 * pointer) with its variables' defaults, resolved against the URL the document came from when it is
 * relative. An absolute http(s) URL without credentials, query or fragment; no trailing slash.
 * Whether plain http is allowed is the endpoint's `allow_insecure_http`, checked when the import is saved.
 *
 * A kit, run on the import's worker thread from its source text (pointer.ts): nothing but its
 * parameters and globals. Throws a Refusal.
 */
export function serverUrlKit({ isObject }: PointerKit, { Refusal }: RefusalKit) {
  const absolute = (text: string, documentUrl: string | undefined, pointer: string, what: string): string => {
    const refuse = (message: string) => new Refusal(pointer, `${what} ${message}`)
    let url: URL
    try {
      url = documentUrl === undefined ? new URL(text) : new URL(text, documentUrl)
    } catch {
      throw documentUrl === undefined && !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)
        ? refuse("is relative: give server_url, or import the document from its URL")
        : refuse("is not a URL")
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") throw refuse("must be an https URL")
    if (url.username !== "" || url.password !== "") throw refuse("may not hold credentials")
    if (url.search !== "" || url.hash !== "" || text.includes("?") || text.includes("#")) {
      throw refuse("may not have a query or a fragment")
    }
    if (/[{}]/.test(url.href)) throw refuse("holds an unresolved variable")
    return url.href.replace(/\/+$/, "")
  }

  const serverBase = (
    holder: Record<string, unknown>,
    at: string,
    serverUrl: string | undefined,
    documentUrl: string | undefined
  ): string => {
    if (serverUrl !== undefined) return absolute(serverUrl, undefined, "", "server_url")
    const servers = Array.isArray(holder.servers) ? holder.servers : []
    const first: unknown = servers[0]
    if (!isObject(first)) {
      if (documentUrl === undefined) throw new Refusal(`${at}/servers`, "the document names no server: give server_url")
      return absolute("/", documentUrl, `${at}/servers`, "the document's default server")
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
      throw new Refusal(`${at}/servers/0/url`, `the server variable {${missing}} has no default`)
    }
    return absolute(substituted, documentUrl, `${at}/servers/0/url`, "the server URL")
  }

  return { serverBase }
}

export type ServerUrlKit = ReturnType<typeof serverUrlKit>
