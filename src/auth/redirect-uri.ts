import { isLoopbackHost } from "../config/address.js"

/**
 * Redirect URI matching (docs/authorization-server.md, "Authorization endpoint"). A loopback redirect
 * registered without a port accepts any port (RFC 8252 §7.3: native apps listen on an ephemeral port); a
 * registered port must match exactly; everything else matches exactly, character for character. No
 * wildcards, fragments or dynamic registration.
 */

/** Why a registered redirect URI is unusable; undefined when it is fine. Used by the configuration rules. */
export const registeredRedirectUriProblem = (text: string): string | undefined => {
  const url = URL.parse(text)
  if (url === null) return "expected an absolute URL"
  if (text.includes("#")) return "must not contain a fragment"
  if (text.includes("*")) return "must not contain wildcards"
  if (url.username !== "" || url.password !== "") return "must not contain credentials"
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    return "must use https (plain http is allowed only on a loopback host)"
  }
  if (url.protocol === "javascript:" || url.protocol === "data:" || url.protocol === "file:") {
    return `must not use the ${url.protocol.slice(0, -1)} scheme`
  }
  return undefined
}

/** A loopback http(s) registration without an explicit port: the only kind that matches more than itself. */
const anyPortLoopback = (registered: string): URL | undefined => {
  const url = URL.parse(registered)
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) return undefined
  if (!isLoopbackHost(url.hostname)) return undefined
  // `URL` drops a default port ("http://127.0.0.1:80/" has port ""), so look at the authority text.
  const authority = registered.slice(url.protocol.length + 2).split(/[/?]/, 1)[0] ?? ""
  return /:[0-9]*$/.test(authority) && !authority.endsWith("]") ? undefined : url
}

const matchesAnyPort = (registered: URL, requested: string): boolean => {
  const url = URL.parse(requested)
  // Port 0 is no port anything listens on (it asks the kernel to pick one): never a real callback.
  if (url === null || url.port === "" || url.port === "0") return false
  // The request must already be in canonical form, so no parser quirk can make two readings disagree.
  const canonical = `${url.protocol}//${url.hostname}:${url.port}${url.pathname}${url.search}`
  return (
    canonical === requested &&
    url.protocol === registered.protocol &&
    url.hostname === registered.hostname &&
    url.pathname === registered.pathname &&
    url.search === registered.search
  )
}

/** True when `requested` is acceptable for a client registered with `registered`. */
export const redirectUriMatches = (registered: ReadonlyArray<string>, requested: string): boolean => {
  if (requested.includes("#")) return false
  return registered.some((candidate) => {
    if (candidate === requested) return true
    const loopback = anyPortLoopback(candidate)
    return loopback !== undefined && matchesAnyPort(loopback, requested)
  })
}
