import { Duration, Redacted } from "effect"
import { bareEndpoint, parseAddressBlock, parseListen, requireHttpsUnlessLoopback } from "./address.js"
import { type Rule, rule, when } from "./cross-field-rule.js"
import { problem } from "./problem.js"

const listenFormat = "expected host:port (IPv6 as [::1]:8080) with a port from 1 to 65535"

export const listenAddress = rule("listenAddress", ["server"], ({ server }) =>
  when("server.listen", parseListen(server.listen) === undefined ? listenFormat : undefined)
)

/** The public URL is the JWT audience and the RFC 9728 `resource`: exact, secret-free, no fragment. */
export const publicUrlSecure = rule("publicUrlSecure", ["server"], ({ server }) =>
  when("server.public_url", requireHttpsUnlessLoopback(server.public_url) ?? bareEndpoint(server.public_url))
)

/** Origins are compared exactly against the `Origin` header, which never has a path or trailing slash. */
/** Trust in `X-Forwarded-For` is by peer address only: every entry must be an IP address or a CIDR block. */
export const trustedProxiesFormat = rule("trustedProxiesFormat", ["server"], ({ server }) =>
  server.trusted_proxies.flatMap((entry, index) =>
    parseAddressBlock(entry) === undefined
      ? [
          problem(
            `server.trusted_proxies[${index}]`,
            `expected an IP address or CIDR block such as 10.0.0.0/8, got "${entry}"`
          )
        ]
      : []
  )
)

export const allowedOriginsExact = rule("allowedOriginsExact", ["allowed_origins"], ({ allowed_origins }) =>
  allowed_origins.flatMap((origin, index) =>
    URL.parse(origin)?.origin === origin
      ? []
      : [problem(`allowed_origins[${index}]`, `expected an origin such as https://app.example.com, got "${origin}"`)]
  )
)

export const storageUrl = rule("storageUrl", ["storage"], ({ storage }) => {
  if (storage.type !== "postgres") return []
  const url = URL.parse(Redacted.value(storage.url))
  // The URL carries the database password: never echo it.
  return url !== null && (url.protocol === "postgres:" || url.protocol === "postgresql:")
    ? []
    : [problem("storage.url", "expected a postgres:// or postgresql:// URL")]
})

export const requestTimeoutPositive = rule("requestTimeoutPositive", ["request_timeout"], ({ request_timeout }) =>
  when("request_timeout", Duration.toMillis(request_timeout) > 0 ? undefined : "must be greater than zero")
)

const wildcardHosts = new Set(["0.0.0.0", "::"])
const localhostAddresses = new Set(["localhost", "127.0.0.1", "::1"])

/** Whether two listen hosts on one port would contend for it. */
export const mayCollide = (a: string, b: string) =>
  a === b ||
  wildcardHosts.has(a) ||
  wildcardHosts.has(b) ||
  ((a === "localhost" || b === "localhost") && localhostAddresses.has(a) && localhostAddresses.has(b))

/** Two listeners on one port fail at bind time; say so while validating instead. */
export const listenersDistinct = rule("listenersDistinct", ["server", "admin"], ({ server, admin }) => {
  const publicSide = parseListen(server.listen)
  const adminSide = parseListen(admin.listen)
  if (publicSide === undefined || adminSide === undefined || publicSide.port !== adminSide.port) return []
  return mayCollide(publicSide.host.toLowerCase(), adminSide.host.toLowerCase())
    ? [problem("admin.listen", `uses the same port as server.listen (${publicSide.port})`)]
    : []
})

export const serverRules: ReadonlyArray<Rule> = [
  listenAddress,
  publicUrlSecure,
  trustedProxiesFormat,
  allowedOriginsExact,
  storageUrl,
  requestTimeoutPositive,
  listenersDistinct
]
