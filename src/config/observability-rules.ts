import { parseListen } from "./address.js"
import { type Rule, rule, when } from "./cross-field-rule.js"
import { problem } from "./problem.js"
import { mayCollide } from "./server-rules.js"

/**
 * `observability.metrics_listen` is a listener of its own: never the public one (metrics are for
 * operators), nor the admin listener's port (the admin listener serves `/metrics` already).
 */
export const metricsListenAddress = rule(
  "metricsListenAddress",
  ["observability", "server", "admin"],
  ({ observability, server, admin }) => {
    const text = observability.metrics_listen
    if (text === undefined) return []
    const address = parseListen(text)
    if (address === undefined) {
      return [
        problem("observability.metrics_listen", "expected host:port (IPv6 as [::1]:9464) with a port from 1 to 65535")
      ]
    }
    const others = [
      ["server.listen", parseListen(server.listen)],
      ["admin.listen", parseListen(admin.listen)]
    ] as const
    return others.flatMap(([setting, other]) =>
      other !== undefined &&
      other.port === address.port &&
      mayCollide(other.host.toLowerCase(), address.host.toLowerCase())
        ? [problem("observability.metrics_listen", `uses the same port as ${setting} (${other.port})`)]
        : []
    )
  }
)

/** Spans leave over HTTP(S) only: OTLP/HTTP, the `/v1/traces` URL of a collector. */
export const otlpEndpointScheme = rule("otlpEndpointScheme", ["observability"], ({ observability }) => {
  const text = observability.otlp_endpoint
  if (text === undefined) return []
  const url = URL.parse(text)
  return when(
    "observability.otlp_endpoint",
    url !== null && (url.protocol === "http:" || url.protocol === "https:")
      ? url.username !== "" || url.password !== ""
        ? "must not carry credentials in the URL"
        : undefined
      : "expected an http:// or https:// URL (OTLP over HTTP, e.g. http://127.0.0.1:4318/v1/traces)"
  )
})

export const observabilityRules: ReadonlyArray<Rule> = [metricsListenAddress, otlpEndpointScheme]
