import { BlockList, isIP, isIPv4 } from "node:net"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { parseAddressBlock } from "../config/address.js"
import type { GatewayConfig } from "../config/schema.js"
import { Config } from "../config/service.js"

/**
 * Who is on the other end of a sign-in request, for throttling and for the per-address cap on pending
 * sign-ins (docs/authorization-server.md, "Client address"). The TCP peer, unless the peer is one of
 * `server.trusted_proxies`: then `X-Forwarded-For` is read from the right, skipping trusted proxies,
 * and the first address not trusted is the client. Entries left of it are whatever the client sent
 * and are never believed.
 */

const lists = new WeakMap<ReadonlyArray<string>, BlockList>()

/** The configuration's trusted proxies as a `BlockList`, built once per loaded configuration. */
export const trustedProxyList = (entries: ReadonlyArray<string>): BlockList => {
  const cached = lists.get(entries)
  if (cached !== undefined) return cached
  const list = new BlockList()
  for (const entry of entries) {
    // Validation (`trustedProxiesFormat`) refuses anything else before a configuration is used.
    const block = parseAddressBlock(entry)
    if (block !== undefined) list.addSubnet(block.address, block.prefix, block.family)
  }
  lists.set(entries, list)
  return list
}

/** An address as the proxy wrote it: bare, or with a port (`1.2.3.4:5`, `[::1]:5`); undefined if neither. */
const bareAddress = (text: string): string | undefined => {
  const trimmed = text.trim()
  if (isIP(trimmed) !== 0) return trimmed
  const bracketed = /^\[([^\]]+)\](?::[0-9]{1,5})?$/.exec(trimmed)?.[1]
  if (bracketed !== undefined) return isIP(bracketed) === 6 ? bracketed : undefined
  const withPort = /^([0-9.]+):[0-9]{1,5}$/.exec(trimmed)?.[1]
  return withPort !== undefined && isIPv4(withPort) ? withPort : undefined
}

const familyOf = (address: string) => (isIP(address) === 4 ? "ipv4" : "ipv6")

const isTrusted = (list: BlockList, address: string) => list.check(address, familyOf(address))

/** IPv4-mapped IPv6 (`::ffff:1.2.3.4`, what dual-stack sockets report) becomes plain IPv4; IPv6 lower case. */
export const canonicalAddress = (address: string): string => {
  const lower = address.toLowerCase()
  const mapped = /^::ffff:([0-9.]+)$/.exec(lower)?.[1]
  return mapped !== undefined && isIPv4(mapped) ? mapped : lower
}

export const resolveClientAddress = (
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: BlockList
): string => {
  const from = peer === undefined ? undefined : bareAddress(peer)
  if (from === undefined) return "unknown"
  if (forwardedFor === undefined || !isTrusted(trusted, from)) return canonicalAddress(from)
  const hops = forwardedFor.split(",")
  let client = from
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = bareAddress(hops[index] ?? "")
    // Unreadable: stop at the last hop vouched for (a proxy), rather than believe anything further left.
    if (hop === undefined) break
    client = hop
    if (!isTrusted(trusted, hop)) break
  }
  return canonicalAddress(client)
}

const expandIPv6 = (address: string): ReadonlyArray<number> | undefined => {
  const [head = "", tail, ...rest] = address.split("::")
  if (rest.length > 0) return undefined
  const groups = (text: string) => (text === "" ? [] : text.split(":").map((group) => Number.parseInt(group, 16)))
  const left = groups(head)
  const right = tail === undefined ? [] : groups(tail)
  const fill = 8 - left.length - right.length
  if (fill < 0 || (tail === undefined && fill !== 0)) return undefined
  const all = [...left, ...Array.from({ length: fill }, () => 0), ...right]
  return all.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff) ? all : undefined
}

/**
 * The unit per-address limits count: an IPv4 address, or the /64 an IPv6 address is in — one host
 * usually holds a whole /64, so counting single IPv6 addresses would let it rotate past every limit.
 */
export const addressBucket = (address: string): string => {
  if (isIP(address) !== 6) return address
  const groups = expandIPv6(address)
  return groups === undefined
    ? address
    : `${groups
        .slice(0, 4)
        .map((group) => group.toString(16))
        .join(":")}::/64`
}

/** The client address of the current request under `config`'s trusted proxies (see above). */
export const clientAddressUnder = (config: GatewayConfig) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    resolveClientAddress(
      Option.getOrUndefined(request.remoteAddress),
      request.headers["x-forwarded-for"],
      trustedProxyList(config.server.trusted_proxies)
    )
  )

/** The client address of the current request (see above). */
export const clientAddress = Effect.flatMap(Config, ({ config }) => clientAddressUnder(config))
