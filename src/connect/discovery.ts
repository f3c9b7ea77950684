import { Data, Either, Schema } from "effect"
import { isLoopbackHost } from "../config/address.js"

/** Where to sign in for one gateway, as its own metadata says (RFC 9728, then RFC 8414). */
export interface GatewayEndpoints {
  /** The gateway's /mcp address: the token's audience (`resource`). */
  readonly resource: string
  readonly issuer: string
  readonly authorizationEndpoint: string
  readonly tokenEndpoint: string
  /** The backends' required scopes the gateway advertises, plus `offline_access` when offered. */
  readonly scopes: ReadonlyArray<string>
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
  scopes_supported: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
})

/** https, or plain http on a loopback host only (development): tokens never cross a network in clear. */
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
  return url
}

/** RFC 9728 §3.1 / RFC 8414 §3.1: the well-known prefix goes between the origin and the path. */
const wellKnown = (url: URL, prefix: string) =>
  `${url.origin}/.well-known/${prefix}${url.pathname === "/" ? "" : url.pathname}`

const getJson = async <A, I>(address: string, schema: Schema.Schema<A, I>, what: string): Promise<A> => {
  let response: Response
  try {
    response = await fetch(address, { headers: { accept: "application/json" }, redirect: "error" })
  } catch (error) {
    throw new DiscoveryFailed({ message: `${what} (${address}) did not answer: ${String(error)}` })
  }
  if (!response.ok) throw new DiscoveryFailed({ message: `${what} (${address}) answered HTTP ${response.status}` })
  const body: unknown = await response.json().catch(() => undefined)
  const decoded = Schema.decodeUnknownEither(schema)(body)
  if (Either.isLeft(decoded)) throw new DiscoveryFailed({ message: `${what} (${address}) is not valid metadata` })
  return decoded.right
}

/**
 * Reads the gateway's protected-resource metadata and its authorization server's metadata. The
 * resource must be the address given, the issuer must echo itself (RFC 8414 §3.3, against mix-up),
 * PKCE S256 must be offered, and every endpoint must be https or loopback http on the issuer's origin.
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
  for (const [name, address] of [
    ["authorization endpoint", server.authorization_endpoint],
    ["token endpoint", server.token_endpoint]
  ] as const) {
    if (checkTransport(address, `The ${name}`).origin !== issuerUrl.origin) {
      throw new DiscoveryFailed({ message: `the ${name} ${address} is not on the issuer's origin` })
    }
  }
  const offline = server.scopes_supported.includes("offline_access") ? ["offline_access"] : []
  return {
    resource: resource.resource,
    issuer,
    authorizationEndpoint: server.authorization_endpoint,
    tokenEndpoint: server.token_endpoint,
    scopes: [...new Set([...resource.scopes_supported, ...offline])]
  }
}
