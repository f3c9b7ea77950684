import { Data, Either, Schema } from "effect"
import { isLoopbackHost } from "../config/address.js"
import { fetchJson } from "./fetch-json.js"

/** Where to sign in for one gateway, as its own metadata says (RFC 9728, then RFC 8414). */
export interface GatewayEndpoints {
  /** The gateway's /mcp address: the token's audience (`resource`). */
  readonly resource: string
  readonly issuer: string
  readonly authorizationEndpoint: string
  readonly tokenEndpoint: string
  /** The backends' required scopes the gateway advertises, plus `offline_access` when offered. */
  readonly scopes: ReadonlyArray<string>
  /** The server says its sign-in answers name it (`iss`, RFC 9207): then an answer without `iss` is refused. */
  readonly issParameterSupported: boolean
}

export class DiscoveryFailed extends Data.TaggedError("DiscoveryFailed")<{ readonly message: string }> {}

const ResourceMetadata = Schema.Struct({
  resource: Schema.String,
  authorization_servers: Schema.Array(Schema.String).pipe(Schema.minItems(1)),
  scopes_supported: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
})

const ServerMetadata = Schema.Struct({
  issuer: Schema.String,
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  code_challenge_methods_supported: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  scopes_supported: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  authorization_response_iss_parameter_supported: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

/**
 * Characters a command line or an opener could read as something other than a URL (`"`, `<`, `>`, `^`, `|`,
 * a backtick, whitespace, control characters) and a `%` that does not start a percent-encoded byte
 * (`%PATH%` is an environment variable to cmd.exe). An address the bridge uses, and the sign-in address
 * it opens in the browser, contains none of them.
 */
const UNSAFE_IN_ADDRESS = /["<>^|`\s\p{Cc}]|%(?![0-9A-Fa-f]{2})/u

/** Whether `text` is free of the characters {@link UNSAFE_IN_ADDRESS} names. */
export const isPlainAddress = (text: string): boolean => !UNSAFE_IN_ADDRESS.test(text)

/**
 * https, or plain http on a loopback host only (development): tokens never cross a network in clear.
 * No credentials, no fragment, and only plain characters ({@link isPlainAddress}).
 */
export const checkTransport = (text: string, what: string): URL => {
  const url = URL.parse(text)
  if (url === null || (url.protocol !== "https:" && url.protocol !== "http:")) {
    throw new DiscoveryFailed({ message: `${what} is not an http(s) address: ${text}` })
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    throw new DiscoveryFailed({ message: `${what} must use https (plain http only on loopback): ${text}` })
  }
  if (url.username !== "" || url.password !== "" || url.hash !== "") {
    throw new DiscoveryFailed({ message: `${what} must not carry credentials or a fragment: ${text}` })
  }
  if (!isPlainAddress(text) || !isPlainAddress(url.href)) {
    throw new DiscoveryFailed({
      message: `${what} contains characters an address should not (quotes, <, >, ^, |, a backtick, whitespace or a stray %): ${JSON.stringify(text.slice(0, 200))}`
    })
  }
  return url
}

/** RFC 9728 §3.1 / RFC 8414 §3.1: the well-known prefix goes between the origin and the path. */
const wellKnown = (url: URL, prefix: string) =>
  `${url.origin}/.well-known/${prefix}${url.pathname === "/" ? "" : url.pathname}`

const getJson = async <A, I>(address: string, schema: Schema.Schema<A, I>, what: string): Promise<A> => {
  const answer = await fetchJson(address, { headers: { accept: "application/json" } }).catch((error: Error) => {
    throw new DiscoveryFailed({ message: `${what} (${address}) did not answer: ${error.message}` })
  })
  if (answer.status < 200 || answer.status > 299) {
    throw new DiscoveryFailed({ message: `${what} (${address}) answered HTTP ${answer.status}` })
  }
  const decoded = Schema.decodeUnknownEither(schema)(answer.body)
  if (Either.isLeft(decoded)) throw new DiscoveryFailed({ message: `${what} (${address}) is not valid metadata` })
  return decoded.right
}

/**
 * Reads the gateway's protected-resource metadata and its authorization server's metadata. The
 * resource must be the address given, the issuer must echo itself (RFC 8414 §3.3, against mix-up),
 * PKCE S256 must be offered, and every endpoint must be https or loopback http on the issuer's origin,
 * with only plain characters in it. The endpoints returned are the parsed, serialized (WHATWG) addresses.
 */
export const discover = async (publicUrl: string): Promise<GatewayEndpoints> => {
  const mcp = checkTransport(publicUrl, "The gateway address")
  const resource = await getJson(
    wellKnown(mcp, "oauth-protected-resource"),
    ResourceMetadata,
    "The gateway's resource metadata"
  )
  if (resource.resource !== mcp.href && resource.resource !== publicUrl) {
    throw new DiscoveryFailed({
      message: `the gateway says its address is ${resource.resource}, not ${publicUrl}; connect to that address`
    })
  }
  const issuer = resource.authorization_servers[0]!
  const issuerUrl = checkTransport(issuer, "The authorization server")
  const server = await getJson(
    wellKnown(issuerUrl, "oauth-authorization-server"),
    ServerMetadata,
    "The authorization server metadata"
  )
  if (server.issuer !== issuer) {
    throw new DiscoveryFailed({ message: `the authorization server metadata names another issuer (${server.issuer})` })
  }
  if (!server.code_challenge_methods_supported.includes("S256")) {
    throw new DiscoveryFailed({ message: "the authorization server does not offer PKCE S256" })
  }
  const [authorizationEndpoint, tokenEndpoint] = (
    [
      ["authorization endpoint", server.authorization_endpoint],
      ["token endpoint", server.token_endpoint]
    ] as const
  ).map(([name, address]) => {
    const url = checkTransport(address, `The ${name}`)
    if (url.origin !== issuerUrl.origin) {
      throw new DiscoveryFailed({ message: `the ${name} ${address} is not on the issuer's origin` })
    }
    return url.href
  })
  const offline = server.scopes_supported.includes("offline_access") ? ["offline_access"] : []
  return {
    resource: resource.resource,
    issuer,
    authorizationEndpoint: authorizationEndpoint!,
    tokenEndpoint: tokenEndpoint!,
    scopes: [...new Set([...resource.scopes_supported, ...offline])],
    issParameterSupported: server.authorization_response_iss_parameter_supported
  }
}
