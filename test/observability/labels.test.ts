/**
 * The fixed words metrics, traces and the health status use for what callers and backends send: a
 * failure's class (never its message), route and method labels from bounded lists, and a client's
 * `traceparent` accepted only in the exact W3C format.
 */

import { makeExternalSpan } from "@effect/opentelemetry/Tracer"
import { describe, expect, it } from "vitest"
import { failureClass } from "../../src/mcp/upstream/failure-class.js"
import { methodLabel, routeLabel } from "../../src/observability/metrics.js"
import { incomingParent } from "../../src/observability/tracing.js"

describe("failureClass", () => {
  it.each([
    ["the backend could not be reached (ECONNREFUSED)", "connect"],
    ["fetch failed: connect ECONNREFUSED 127.0.0.1:9", "connect"],
    ["getaddrinfo ENOTFOUND tools.internal", "dns"],
    ["unable to verify the first certificate", "tls"],
    ["the call's deadline passed", "timeout"],
    ["Request timed out", "timeout"],
    ["Streamable HTTP error: Error POSTing to endpoint (HTTP 503): upstream busy", "http_503"],
    ["Streamable HTTP error: Error POSTing to endpoint (HTTP 401): token=abc", "auth"],
    ["the backend's answer is not JSON-RPC", "protocol"],
    ["something nobody foresaw", "other"]
  ])("%s → %s", (reason, expected) => {
    expect(failureClass(reason)).toBe(expected)
  })
})

describe("route and method labels", () => {
  it("name known routes and methods, and everything else `other`", () => {
    expect(routeLabel("/mcp", "/mcp")).toBe("/mcp")
    expect(routeLabel("/sso/token?x=1", "/mcp")).toBe("/sso/token")
    expect(routeLabel("/sso/login/local", "/mcp")).toBe("/sso")
    expect(routeLabel("/.well-known/oauth-protected-resource/mcp", "/mcp")).toBe("/.well-known")
    expect(routeLabel("/ssox", "/mcp")).toBe("other")
    expect(routeLabel("/wp-admin/setup.php", "/mcp")).toBe("other")
    expect(methodLabel("tools/call")).toBe("tools/call")
    expect(methodLabel("tools/call2")).toBe("other")
    expect(methodLabel(42)).toBe("other")
    expect(methodLabel(undefined)).toBe("none")
  })
})

describe("incomingParent", () => {
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
  const spanId = "00f067aa0ba902b7"
  it("is no parent while tracing is off (no span maker)", () => {
    expect(incomingParent(`00-${traceId}-${spanId}-01`, undefined, undefined)).toBeUndefined()
  })
  it("accepts a W3C traceparent, with its tracestate", () => {
    expect(incomingParent(`00-${traceId}-${spanId}-01`, "vendor=x", makeExternalSpan)).toMatchObject({
      traceId,
      spanId,
      sampled: true
    })
  })
  it.each([
    ["absent", undefined],
    ["repeated", [`00-${traceId}-${spanId}-01`, `00-${traceId}-${spanId}-01`]],
    ["uppercase", `00-${traceId.toUpperCase()}-${spanId}-01`],
    ["short trace id", `00-${traceId.slice(2)}-${spanId}-01`],
    ["all-zero trace id", `00-${"0".repeat(32)}-${spanId}-01`],
    ["all-zero span id", `00-${traceId}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${traceId}-${spanId}-01`],
    ["trailing data", `00-${traceId}-${spanId}-01-extra`]
  ])("refuses one that is %s: a new root", (_, header) => {
    expect(incomingParent(header, undefined, makeExternalSpan)).toBeUndefined()
  })
})
