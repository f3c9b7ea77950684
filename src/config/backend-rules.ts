import { Duration, Redacted } from "effect"
import { bearerTokenSyntax, headerName, headerValue } from "../http/header-syntax.js"
import { requireHttpsUnlessLoopback } from "./address.js"
import { type Rule, rule, when } from "./cross-field-rule.js"
import { formatPath } from "./path.js"
import { problem } from "./problem.js"
import type { BackendConfig } from "./schema.js"
import type { ConfigProblem } from "./service.js"

export const backendIdsUnique = rule("backendIdsUnique", ["backends"], ({ backends }) => {
  const seen = new Set<string>()
  return backends.flatMap((backend, index) => {
    if (seen.has(backend.id)) return [problem(`backends[${index}].id`, `duplicate backend id "${backend.id}"`)]
    seen.add(backend.id)
    return []
  })
})

/** Two backends with one name prefix would expose each other's names: refused (docs/mcp.md, "Naming"). */
export const backendPrefixesUnique = rule("backendPrefixesUnique", ["backends"], ({ backends }) => {
  const seen = new Map<string, string>()
  return backends.flatMap((backend, index) => {
    const prefix = backend.naming.prefix ?? `${backend.id}__`
    if (prefix === "") return []
    const other = seen.get(prefix)
    seen.set(prefix, backend.id)
    return other === undefined
      ? []
      : [problem(`backends[${index}].naming.prefix`, `the name prefix "${prefix}" is also backend "${other}"'s`)]
  })
})

/**
 * Backends get bearer tokens and user requests: plain http only when the YAML says so explicitly. A
 * user name or password in the URL would be shown wherever the URL is (logs, the console, diffs):
 * secrets go in `headers` or `credentials`, which are sealed and shown only as configured.
 */
export const backendUrlsSecure = rule("backendUrlsSecure", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index): ReadonlyArray<ConfigProblem> => {
    const url = URL.parse(backend.url)
    if (url !== null && (url.username !== "" || url.password !== "")) {
      return [
        problem(
          `backends[${index}].url`,
          "must not contain a user name or password: put the secret in headers or credentials"
        )
      ]
    }
    const protocol = url?.protocol
    if (protocol === "https:" || (protocol === "http:" && backend.allow_insecure_http)) return []
    const message =
      protocol === "http:" ? "must use https (set allow_insecure_http: true to allow plain http)" : "must use https"
    return when(`backends[${index}].url`, message)
  })
)

/** The client secret goes to this issuer: https, or plain http on loopback only (development, tests). */
export const backendOAuthIssuerSecure = rule("backendOAuthIssuerSecure", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index) =>
    backend.oauth === undefined
      ? []
      : when(`backends[${index}].oauth.issuer`, requireHttpsUnlessLoopback(backend.oauth.issuer))
  )
)

/** Both would set the Authorization header; refusing beats silently picking one. */
export const backendAuthExclusive = rule("backendAuthExclusive", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index) =>
    backend.credentials !== undefined && backend.oauth !== undefined
      ? [problem(`backends[${index}]`, "set credentials or oauth, not both")]
      : []
  )
)

export const backendTimeoutsPositive = rule("backendTimeoutsPositive", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index) =>
    (["connect", "call"] as const).flatMap((key) =>
      Duration.toMillis(backend.timeouts[key]) > 0
        ? []
        : [problem(`backends[${index}].timeouts.${key}`, "must be greater than zero")]
    )
  )
)

/** A pattern in two rules would make publication depend on rule order; say which one instead. */
export const toolPatternsUnique = rule("toolPatternsUnique", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index) => {
    const seen = new Set<string>()
    return backend.tool_rules.flatMap((toolRule, ruleIndex) =>
      toolRule.tools.flatMap((pattern, patternIndex) => {
        if (!seen.has(pattern)) {
          seen.add(pattern)
          return []
        }
        const path = `backends[${index}].tool_rules[${ruleIndex}].tools[${patternIndex}]`
        return [problem(path, `"${pattern}" already appears in an earlier tool rule of this backend`)]
      })
    )
  })
)

// The transport sets these itself; a fixed header must not override the protocol, the body framing or
// the connection's handling (hop-by-hop; undici, which sends forwarded calls, refuses Keep-Alive,
// Upgrade and Expect outright, and would fail every call over them).
const managedHeaders = new Set([
  "accept",
  "connection",
  "content-length",
  "content-type",
  "expect",
  "host",
  "keep-alive",
  "te",
  "transfer-encoding",
  "upgrade",
  "mcp-method",
  "mcp-name",
  "mcp-protocol-version",
  "mcp-session-id"
])

export const backendHeadersAllowed = rule("backendHeadersAllowed", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index) =>
    Object.keys(backend.headers).flatMap((name): ReadonlyArray<ConfigProblem> => {
      const path = formatPath(["backends", index, "headers", name])
      const lower = name.toLowerCase()
      if (!headerName.test(name)) return [problem(path, "is not a valid HTTP header name")]
      if (managedHeaders.has(lower) || lower.startsWith("mcp-param-")) {
        return [problem(path, "is set by the MCP transport and cannot be configured")]
      }
      if (lower === "authorization" && (backend.credentials !== undefined || backend.oauth !== undefined)) {
        return [problem(path, "conflicts with credentials/oauth, which set Authorization")]
      }
      // Never the value in the message: it is often a secret, and may come from the environment.
      if (!headerValue.test(backend.headers[name] ?? "")) {
        return [problem(path, "the value must be printable ASCII, without CR, LF or NUL")]
      }
      return []
    })
  )
)

/** A control character (RFC 7617 §2: neither a Basic user-id nor a password may hold one). */
const controlCharacter = /\p{Cc}/u

/**
 * Credentials become an `Authorization` header: a bearer token must be one (RFC 6750 b64token), so a
 * newline from the environment fails where the configuration is read, not in every connection attempt
 * with the value in its error (which the log would have shown); Basic credentials hold no control
 * character and the user-id no `:`. A backend's and an HTTP endpoint's (src/sources/checks.ts) alike;
 * the messages never hold the value.
 */
export const credentialProblems = (
  credentials: BackendConfig["credentials"]
): ReadonlyArray<{ readonly field: string; readonly message: string }> => {
  if (credentials?.type === "bearer") {
    return bearerTokenSyntax.test(Redacted.value(credentials.token))
      ? []
      : [
          {
            field: "token",
            message: "must be a bearer token: letters, digits and - . _ ~ + /, then any = (no spaces, CR or LF)"
          }
        ]
  }
  if (credentials?.type === "basic") {
    return [
      ...(controlCharacter.test(credentials.username) || credentials.username.includes(":")
        ? [{ field: "username", message: "must not contain a control character or a colon" }]
        : []),
      ...(controlCharacter.test(Redacted.value(credentials.password))
        ? [{ field: "password", message: "must not contain a control character (CR, LF, tab, NUL, …)" }]
        : [])
    ]
  }
  return []
}

export const backendCredentialsSendable = rule("backendCredentialsSendable", ["backends"], ({ backends }) =>
  backends.flatMap(
    (backend, index): ReadonlyArray<ConfigProblem> =>
      credentialProblems(backend.credentials).map((each) =>
        problem(`backends[${index}].credentials.${each.field}`, each.message)
      )
  )
)

export const catalogRefreshPositive = rule("catalogRefreshPositive", ["catalog"], ({ catalog }) =>
  when(
    "catalog.refresh_interval",
    Duration.toMillis(catalog.refresh_interval) >= 1000 ? undefined : "must be at least 1s"
  )
)

export const backendRules: ReadonlyArray<Rule> = [
  backendIdsUnique,
  backendPrefixesUnique,
  backendUrlsSecure,
  backendOAuthIssuerSecure,
  backendAuthExclusive,
  backendTimeoutsPositive,
  toolPatternsUnique,
  backendHeadersAllowed,
  backendCredentialsSendable,
  catalogRefreshPositive
]
