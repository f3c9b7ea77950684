import { describe, expect, it } from "@effect/vitest"
import { staticChanges, staticFields } from "../../src/config/static-fields.js"
import { configOf } from "../fixtures/config/base.js"

// docs/configuration.md, "Static or reloadable": restart required for server.listen, server.public_url, all
// auth, client_authorization and admin fields; reloadable: allowed origins, request/drain parameters,
// backends. Storage and log_level are static too.

// One change per static field, alone: the reload that carries it is refused and names that field (the
// spawned-process test in test/runtime/process.test.ts shows the refusal end to end).
const oneChangeEach = [
  ["server.listen", { server: { listen: "0.0.0.0:9090" } }],
  ["server.public_url", { server: { public_url: "https://gw.example.com/other" } }],
  ["storage", { storage: { type: "sqlite", path: "/var/lib/other.db" } }],
  ["log_level", { log_level: "debug" }],
  ["auth", { auth: { enterprise_membership_max_age: "1h" } }],
  ["client_authorization", { client_authorization: { enabled: true, client_id: "portal" } }],
  ["admin", { admin: { required_scopes: ["gateway:operators"] } }],
  // The approvals' maintenance is process-wide and reads it at start (src/approvals/maintenance.ts).
  ["approvals.retention", { approvals: { retention: "7d" } }],
  // The metrics listener and the trace exporter live for the process (src/observability/).
  ["observability.metrics_listen", { observability: { metrics_listen: "127.0.0.1:9464" } }],
  ["observability.otlp_endpoint", { observability: { otlp_endpoint: "http://127.0.0.1:4318/v1/traces" } }],
  ["observability.service_instance_id", { observability: { service_instance_id: "gw-2" } }],
  ["observability.trace_queue_size", { observability: { trace_queue_size: 128 } }]
] as const

describe("staticChanges", () => {
  it.each(oneChangeEach)("a reload changing %s alone is refused, naming it", (field, patch) => {
    expect(staticChanges(configOf(), configOf(patch))).toEqual([field])
  })

  it("every static field has its case above", () => {
    expect(oneChangeEach.map(([field]) => field).sort()).toEqual([...staticFields].sort())
  })

  it("finds nothing between two loads of the same file", () => {
    expect(staticChanges(configOf(), configOf())).toEqual([])
  })

  it("ignores reloadable fields", () => {
    const after = configOf({
      allowed_origins: ["https://app.example.com"],
      request_timeout: "5s",
      drain_timeout: "1m",
      backends: [{ id: "a", url: "https://a.example.com/mcp" }],
      // Read per request (src/auth/client-address.ts): a new proxy address applies without a restart.
      server: { trusted_proxies: ["10.0.0.0/8"] },
      // Read by each generation's /mcp handler.
      observability: { trust_incoming_trace: true }
    })
    expect(staticChanges(configOf(), after)).toEqual([])
  })

  it("reports each changed static path", () => {
    const after = configOf({
      server: { listen: "0.0.0.0:9090", public_url: "https://gw2.example.com/mcp" },
      auth: { issuer: "https://gw2.example.com/sso" },
      storage: { type: "sqlite", path: "/var/lib/other.db" },
      log_level: "debug",
      client_authorization: { enabled: true, client_id: "portal" },
      admin: { listen: "127.0.0.1:9091" },
      approvals: { retention: "1d" },
      observability: {
        metrics_listen: "127.0.0.1:9464",
        otlp_endpoint: "http://127.0.0.1:4318/v1/traces",
        service_instance_id: "gw-2",
        trace_queue_size: 128
      }
    })
    expect(staticChanges(configOf(), after)).toEqual([...staticFields])
  })

  it("compares secrets by value and durations by length, deep inside auth and admin", () => {
    const webhook = (secret: string) => ({
      admin: { approvals: { notifications: { url: "https://hooks.example.com", secret } } }
    })
    expect(staticChanges(configOf(webhook("a".repeat(32))), configOf(webhook("a".repeat(32))))).toEqual([])
    expect(staticChanges(configOf(webhook("a".repeat(32))), configOf(webhook("b".repeat(32))))).toEqual(["admin"])
    const maxAge = (value: string) => ({ auth: { enterprise_membership_max_age: value } })
    expect(staticChanges(configOf(maxAge("24h")), configOf(maxAge("1d")))).toEqual([])
    expect(staticChanges(configOf(maxAge("24h")), configOf(maxAge("12h")))).toEqual(["auth"])
  })

  it("treats an absent optional value and an added one as a change", () => {
    const after = configOf({ auth: { sso: { directory_token_env: "DIR_TOKEN" } } })
    expect(staticChanges(configOf(), after)).toEqual(["auth"])
  })
})
