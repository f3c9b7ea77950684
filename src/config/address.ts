import { isIPv4, isIPv6 } from "node:net"

/** Listener addresses and URL checks shared by the cross-field rules and the HTTP layer. */

const hostname =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/
const portText = /^[0-9]{1,5}$/

/**
 * `host:port`, IPv6 hosts in brackets (`[::1]:8080`); port 1-65535. The returned host has no brackets,
 * ready for `server.listen({ host, port })`. A host is required: binding every interface must be
 * written out (`0.0.0.0:8080`), never implied.
 */
export const parseListen = (text: string): { host: string; port: number } | undefined => {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):([^:]+)$/.exec(text)
  if (match === null) return undefined
  const [, v6, other, port] = match
  if (port === undefined || !portText.test(port)) return undefined
  const number = Number(port)
  if (number < 1 || number > 65535) return undefined
  if (v6 !== undefined) return isIPv6(v6) ? { host: v6, port: number } : undefined
  if (other === undefined || !(isIPv4(other) || hostname.test(other))) return undefined
  return { host: other, port: number }
}

/** 127.0.0.0/8, ::1 (any spelling) and `localhost`; brackets around IPv6 are accepted (URL hostnames). */
export const isLoopbackHost = (host: string): boolean => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  if (bare.toLowerCase() === "localhost") return true
  if (isIPv4(bare)) return bare.startsWith("127.")
  if (isIPv6(bare)) return new URL(`http://[${bare}]/`).hostname === "[::1]"
  return false
}

/** Undefined when `text` is an https URL; otherwise why not. */
export const requireHttps = (text: string): string | undefined => {
  const url = URL.parse(text)
  if (url === null) return "expected an absolute URL"
  return url.protocol === "https:" ? undefined : `must use https (got ${url.protocol.slice(0, -1)})`
}

/** Like `requireHttps`, but plain http is accepted on a loopback host (development, `npm start`). */
export const requireHttpsUnlessLoopback = (text: string): string | undefined => {
  const url = URL.parse(text)
  if (url === null) return "expected an absolute URL"
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return undefined
  return url.protocol === "https:" ? undefined : "must use https (plain http is allowed only on a loopback host)"
}

/** Credentials, query and fragment in an endpoint URL leak into logs or are silently dropped by clients. */
export const bareEndpoint = (text: string): string | undefined => {
  const url = URL.parse(text)
  if (url === null) return "expected an absolute URL"
  if (url.username !== "" || url.password !== "") return "must not contain credentials"
  if (url.search !== "") return "must not contain a query"
  if (url.hash !== "") return "must not contain a fragment"
  return undefined
}

export interface AddressBlock {
  readonly address: string
  readonly prefix: number
  readonly family: "ipv4" | "ipv6"
}

/**
 * A `server.trusted_proxies` entry: one IP address (`10.0.0.5`, `fd00::1`) or a CIDR block
 * (`10.0.0.0/8`, `fd00::/8`). Host names are refused: a proxy is recognised by the connection's peer
 * address, and resolving names per request would make trust depend on DNS.
 */
export const parseAddressBlock = (text: string): AddressBlock | undefined => {
  const [address = "", prefixText, ...rest] = text.split("/")
  if (rest.length > 0) return undefined
  const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined
  if (family === undefined) return undefined
  const max = family === "ipv4" ? 32 : 128
  if (prefixText === undefined) return { address, prefix: max, family }
  if (!/^[0-9]{1,3}$/.test(prefixText) || Number(prefixText) > max) return undefined
  return { address, prefix: Number(prefixText), family }
}
