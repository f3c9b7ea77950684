import { Duration } from "effect"
import { requireHttps } from "./address.js"
import { problem } from "./problem.js"
import { type Rule, rule, when } from "./rule.js"
import type { ConfigProblem } from "./service.js"

export const backendIdsUnique = rule("backendIdsUnique", ["backends"], ({ backends }) => {
  const seen = new Set<string>()
  return backends.flatMap((backend, index) => {
    if (seen.has(backend.id)) return [problem(`backends[${index}].id`, `duplicate backend id "${backend.id}"`)]
    seen.add(backend.id)
    return []
  })
})

/** Backends get bearer tokens and user requests: plain http only when the YAML says so explicitly. */
export const backendUrlsSecure = rule("backendUrlsSecure", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index): ReadonlyArray<ConfigProblem> => {
    const protocol = URL.parse(backend.url)?.protocol
    if (protocol === "https:" || (protocol === "http:" && backend.allow_insecure_http)) return []
    const message =
      protocol === "http:" ? "must use https (set allow_insecure_http: true to allow plain http)" : "must use https"
    return when(`backends[${index}].url`, message)
  })
)

export const backendOAuthIssuerSecure = rule("backendOAuthIssuerSecure", ["backends"], ({ backends }) =>
  backends.flatMap((backend, index) =>
    backend.oauth === undefined ? [] : when(`backends[${index}].oauth.issuer`, requireHttps(backend.oauth.issuer))
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

export const backendRules: ReadonlyArray<Rule> = [
  backendIdsUnique,
  backendUrlsSecure,
  backendOAuthIssuerSecure,
  backendAuthExclusive,
  backendTimeoutsPositive
]
