import { describe, expect, it } from "@effect/vitest"
import type { Rule } from "../../src/config/cross-field-rule.js"
import { metricsListenAddress, otlpEndpointScheme } from "../../src/config/observability-rules.js"
import { configOf, noSecrets } from "../fixtures/config/base.js"

// docs/configuration.md, `observability.*`: a metrics listener of its own, and traces over HTTP(S) only.

const run = (rule: Rule, patch: Record<string, unknown> = {}) =>
  rule.check(configOf(patch), noSecrets).map(({ path, message }) => `${path}: ${message}`)

describe("observability rules", () => {
  it("observability.metrics_listen: host:port, never the port of the public or the admin listener", () => {
    const admin = configOf().admin.listen
    const publicSide = configOf().server.listen
    expect(run(metricsListenAddress)).toEqual([])
    expect(run(metricsListenAddress, { observability: { metrics_listen: "127.0.0.1:9464" } })).toEqual([])
    expect(run(metricsListenAddress, { observability: { metrics_listen: "not an address" } })).toEqual([
      "observability.metrics_listen: expected host:port (IPv6 as [::1]:9464) with a port from 1 to 65535"
    ])
    expect(run(metricsListenAddress, { observability: { metrics_listen: admin } })).toEqual([
      `observability.metrics_listen: uses the same port as admin.listen (${admin.split(":").at(-1)})`
    ])
    const publicPort = publicSide.split(":").at(-1)
    expect(run(metricsListenAddress, { observability: { metrics_listen: `0.0.0.0:${publicPort}` } })).toEqual([
      `observability.metrics_listen: uses the same port as server.listen (${publicPort})`
    ])
  })

  it("observability.otlp_endpoint: http or https, without credentials in the URL", () => {
    expect(run(otlpEndpointScheme, { observability: { otlp_endpoint: "http://127.0.0.1:4318/v1/traces" } })).toEqual([])
    expect(run(otlpEndpointScheme, { observability: { otlp_endpoint: "grpc://collector:4317" } })).toEqual([
      "observability.otlp_endpoint: expected an http:// or https:// URL (OTLP over HTTP, e.g. http://127.0.0.1:4318/v1/traces)"
    ])
    expect(
      run(otlpEndpointScheme, { observability: { otlp_endpoint: "https://user:pw@collector/v1/traces" } })
    ).toEqual(["observability.otlp_endpoint: must not carry credentials in the URL"])
  })

  it("observability has its defaults: tracing off, a client's trace not trusted, a bounded queue", () => {
    expect(configOf().observability).toEqual({ trust_incoming_trace: false, trace_queue_size: 4096 })
  })
})
