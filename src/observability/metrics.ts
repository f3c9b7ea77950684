import { Counter, Gauge, Registry } from "prom-client"
import { FastCounter, FastHistogram } from "./series.js"

/** HTTP statuses as label text, without a new string per request. */
const statusTexts = new Map<number, string>()
const statusText = (status: number): string => {
  let text = statusTexts.get(status)
  if (text === undefined) {
    text = String(status)
    if (statusTexts.size < 1000) statusTexts.set(status, text)
  }
  return text
}

/**
 * The gateway's Prometheus metrics (docs/operations.md, "Metrics"; docs/decisions.md, "Metrics with
 * prom-client"). One registry per process, like the counts it keeps: counters move where things happen
 * (the /mcp handler, tool calls, sign-ins, security events), gauges of live state (backends, outboxes,
 * generations) are read from their owners when `/metrics` is scraped (`setSources`).
 *
 * A module singleton rather than a service: the hot path and the security-event helper count from plain
 * code with no service in reach, and a count must not depend on which generation a request ran in.
 *
 * Label values are bounded sets only — routes from a fixed list, JSON-RPC methods from the protocol's
 * list, backend ids and published tool names from the configuration, outcomes and reasons from fixed
 * words. Never a user id, a token, an argument or a caller-chosen name.
 */

/** Seconds: from a cached tools/list answer (~100 µs) to `request_timeout`'s default (60 s). */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** The JSON-RPC methods counted by name; anything else is `other` (a client chooses the method text). */
const knownMethods = new Set([
  "initialize",
  "ping",
  "tools/list",
  "tools/call",
  "prompts/list",
  "prompts/get",
  "resources/list",
  "resources/read",
  "resources/templates/list",
  "resources/subscribe",
  "resources/unsubscribe",
  "completion/complete",
  "logging/setLevel",
  "subscriptions/listen",
  "notifications/initialized",
  "notifications/cancelled",
  "notifications/progress",
  "notifications/roots/list_changed"
])

export const methodLabel = (method: unknown): string =>
  typeof method === "string" && knownMethods.has(method) ? method : method === undefined ? "none" : "other"

/** Routes of the public listener as counted; any other path is `other`, so a scanner cannot add series. */
const routePrefixes: ReadonlyArray<readonly [string, string]> = [
  ["/sso/token", "/sso/token"],
  ["/sso/authorize", "/sso/authorize"],
  ["/sso/callback", "/sso/callback"],
  ["/sso/directory", "/sso/directory"],
  ["/sso/approvals", "/sso/approvals"],
  ["/sso/grants", "/sso/grants"],
  ["/sso", "/sso"],
  ["/.well-known", "/.well-known"],
  ["/readyz", "/readyz"],
  ["/healthz", "/healthz"],
  ["/api", "/api"]
]

/** The route label of a request path (the query is not looked at); `mcpPath` is the public URL's path. */
export const routeLabel = (url: string, mcpPath: string): string => {
  const end = url.indexOf("?")
  const path = end === -1 ? url : url.slice(0, end)
  if (path === mcpPath || path.startsWith(`${mcpPath}/`)) return "/mcp"
  for (const [prefix, label] of routePrefixes) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return label
  }
  return "other"
}

/** How a tools/call ended, in fixed words (docs/operations.md, "Metrics"). */
export type CallOutcome =
  | "ok"
  | "tool_error"
  | "backend_error"
  | "failed"
  | "timeout"
  | "cancelled"
  | "denied"
  | "approval_required"
  | "invalid"

export interface BackendState {
  readonly id: string
  readonly status: "connecting" | "ready" | "unavailable"
  /** Seconds since its catalog was last fetched; undefined when it has none. */
  readonly catalogAgeSeconds: number | undefined
}

export interface OutboxState {
  readonly queue: "webhook" | "archive"
  readonly enabled: boolean
  readonly pending: number | null
  readonly failed: number | null
  readonly oldestAgeSeconds: number | null
}

/** Live state read at scrape time, from whoever owns it (the supervisor or a test gateway). */
export interface MetricSources {
  readonly generation?: () => {
    readonly id: number
    readonly draining: number
    readonly backends: ReadonlyArray<BackendState>
  }
  readonly outboxes?: () => Promise<ReadonlyArray<OutboxState>>
}

/** The sign-in a security event reports, if it reports one: provider kind and result. */
const signInOfEvent: Readonly<
  Record<string, (fields: Readonly<Record<string, unknown>>) => readonly [string, string]>
> = {
  "auth.sign_in_failed": () => ["local", "failed"],
  "auth.totp_failed": () => ["local", "failed"],
  "auth.sign_in_throttled": () => ["local", "throttled"],
  "auth.ldap_sign_in_refused": (fields) => ["ldap", fields["reason"] === "throttled" ? "throttled" : "refused"],
  "auth.upstream_sign_in_refused": () => ["upstream", "refused"]
}

/** The approval state a security event moves an approval into. */
const approvalStateOfEvent: Readonly<Record<string, string>> = {
  "approval.requested": "pending",
  "approval.approved": "approved",
  "approval.rejected": "rejected",
  "approval.revoked": "revoked",
  "approval.expired": "expired",
  "approval.executed": "completed",
  "approval.outcome_unknown": "unknown",
  "approval.intent_invalid": "unknown"
}

/** Security event names are fixed words; one that is not (a typo in new code) must not add series freely. */
const eventName = /^[a-z_]+\.[a-z_]+$/

export class GatewayMetrics {
  readonly registry = new Registry()
  private sources: MetricSources = {}

  // The request path's metrics: updated per request, so kept in ./series.ts rather than by prom-client.
  private readonly requests = this.fast(
    new FastCounter(
      "gateway_http_requests_total",
      "HTTP requests answered on the public listener, by route and status (499: the client left first).",
      ["route", "status"]
    )
  )
  private readonly mcpDuration = this.fast(
    new FastHistogram(
      "gateway_mcp_request_duration_seconds",
      "POST /mcp requests from arrival to the end of the answer, by JSON-RPC method.",
      ["method"],
      DURATION_BUCKETS
    )
  )
  private readonly callDuration = this.fast(
    new FastHistogram(
      "gateway_tool_call_duration_seconds",
      "tools/call sent to a backend, from the decision to the backend's answer, by backend and outcome.",
      ["backend", "outcome"],
      DURATION_BUCKETS
    )
  )
  private readonly calls = this.fast(
    new FastCounter(
      "gateway_tool_calls_total",
      "tools/call of published tools, by backend, tool (its published name) and outcome.",
      ["backend", "tool", "outcome"]
    )
  )
  private readonly decisions = this.fast(
    new FastCounter(
      "gateway_policy_decisions_total",
      "Call decisions of the policy, by outcome (allow, deny, needs_approval) and reason.",
      ["outcome", "reason"]
    )
  )
  private readonly signIns = new Counter({
    name: "gateway_sign_ins_total",
    help: "Sign-ins at /sso, by provider kind (local, ldap, upstream) and result (success, failed, throttled, refused).",
    labelNames: ["provider", "result"] as const,
    registers: [this.registry]
  })
  private readonly refreshRotations = new Counter({
    name: "gateway_refresh_rotations_total",
    help: "Refresh tokens rotated (a refresh_token grant that succeeded).",
    registers: [this.registry]
  })
  private readonly refreshReuses = new Counter({
    name: "gateway_refresh_reuse_detected_total",
    help: "Consumed refresh tokens presented again; each revoked its session.",
    registers: [this.registry]
  })
  private readonly approvals = new Counter({
    name: "gateway_approval_transitions_total",
    help: "Approvals entering a state (pending, approved, rejected, revoked, expired, completed, unknown).",
    labelNames: ["state"] as const,
    registers: [this.registry]
  })
  private readonly securityEvents = new Counter({
    name: "gateway_security_events_total",
    help: "Security events written to the log, by event name (docs/operations.md, Security events).",
    labelNames: ["event"] as const,
    registers: [this.registry]
  })
  private readonly reloads = new Counter({
    name: "gateway_reloads_total",
    help: "Reloads (SIGHUP), by result: applied, invalid_config, static_changed, build_failed.",
    labelNames: ["result"] as const,
    registers: [this.registry]
  })
  private readonly spansDropped = new Counter({
    name: "gateway_trace_spans_dropped_total",
    help: "Finished spans not exported, by reason: queue_full, export_failed.",
    labelNames: ["reason"] as const,
    registers: [this.registry]
  })
  private readonly spansExported = new Counter({
    name: "gateway_trace_spans_exported_total",
    help: "Finished spans the OTLP receiver acknowledged.",
    registers: [this.registry]
  })

  constructor() {
    const self = this
    new Gauge({
      name: "gateway_generation_id",
      help: "The id of the generation serving new requests (1 at start, one more per applied reload).",
      registers: [this.registry],
      collect() {
        const generation = self.sources.generation?.()
        if (generation !== undefined) this.set(generation.id)
      }
    })
    new Gauge({
      name: "gateway_generations_draining",
      help: "Replaced generations still draining their requests.",
      registers: [this.registry],
      collect() {
        const generation = self.sources.generation?.()
        if (generation !== undefined) this.set(generation.draining)
      }
    })
    new Gauge({
      name: "gateway_backend_ready",
      help: "1 when the backend is connected with a fresh catalog, else 0; by configured backend id.",
      labelNames: ["backend"] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const backend of self.sources.generation?.().backends ?? []) {
          this.set({ backend: backend.id }, backend.status === "ready" ? 1 : 0)
        }
      }
    })
    new Gauge({
      name: "gateway_backend_state",
      help: "1 for the backend's current state (connecting, ready, unavailable), 0 for the others.",
      labelNames: ["backend", "state"] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const backend of self.sources.generation?.().backends ?? []) {
          for (const state of ["connecting", "ready", "unavailable"] as const) {
            this.set({ backend: backend.id, state }, backend.status === state ? 1 : 0)
          }
        }
      }
    })
    new Gauge({
      name: "gateway_backend_catalog_age_seconds",
      help: "Seconds since the backend's catalog was last fetched (absent: no catalog yet).",
      labelNames: ["backend"] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const backend of self.sources.generation?.().backends ?? []) {
          if (backend.catalogAgeSeconds !== undefined) this.set({ backend: backend.id }, backend.catalogAgeSeconds)
        }
      }
    })
    const outbox = (name: string, help: string, value: (state: OutboxState) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ["queue"] as const,
        registers: [this.registry],
        async collect() {
          this.reset()
          for (const state of (await self.sources.outboxes?.()) ?? []) {
            const figure = value(state)
            if (state.enabled && figure !== null) this.set({ queue: state.queue }, figure)
          }
        }
      })
    outbox(
      "gateway_outbox_depth",
      "Events waiting for delivery, by queue (webhook, archive).",
      (state) => state.pending
    )
    outbox("gateway_outbox_failed", "Of those, events whose delivery failed and waits for a retry.", (s) => s.failed)
    outbox(
      "gateway_outbox_oldest_age_seconds",
      "Age of the oldest event waiting for delivery, by queue; 0 when none waits.",
      (state) => state.oldestAgeSeconds ?? 0
    )
  }

  /** Where the gauges of live state read from; a later call replaces what it names. */
  setSources(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources }
  }

  private fast<M extends FastCounter | FastHistogram>(metric: M): M {
    this.registry.registerMetric(metric as unknown as Parameters<Registry["registerMetric"]>[0])
    return metric
  }

  request(route: string, status: number): void {
    this.requests.inc([route, statusText(status)])
  }

  mcpRequest(method: string, seconds: number): void {
    this.mcpDuration.observe([method], seconds)
  }

  decision(outcome: "allow" | "deny" | "needs_approval", reason: string): void {
    this.decisions.inc([outcome, reason])
  }

  /** A tools/call of a published tool that was decided; `seconds` when it went to the backend. */
  toolCall(backend: string, tool: string, outcome: CallOutcome, seconds?: number): void {
    this.calls.inc([backend, tool, outcome])
    if (seconds !== undefined) this.callDuration.observe([backend, outcome], seconds)
  }

  signIn(provider: "local" | "ldap" | "upstream", result: "success"): void {
    this.signIns.inc({ provider, result })
  }

  refreshRotated(): void {
    this.refreshRotations.inc()
  }

  /** A security event was written: counted by name, and as the sign-in or approval it reports. */
  securityEvent(event: string, fields: Readonly<Record<string, unknown>>): void {
    this.securityEvents.inc({ event: eventName.test(event) && event.length <= 64 ? event : "other" })
    const signIn = signInOfEvent[event]
    if (signIn !== undefined) {
      const [provider, result] = signIn(fields)
      this.signIns.inc({ provider, result })
    }
    const state = approvalStateOfEvent[event]
    if (state !== undefined) this.approvals.inc({ state })
    if (event === "auth.refresh_reused") this.refreshReuses.inc()
  }

  reload(result: "applied" | "invalid_config" | "static_changed" | "build_failed"): void {
    this.reloads.inc({ result })
  }

  spansDroppedBy(reason: "queue_full" | "export_failed", count: number): void {
    if (count > 0) this.spansDropped.inc({ reason }, count)
  }

  spansExportedCount(count: number): void {
    if (count > 0) this.spansExported.inc(count)
  }

  /** The exposition, Prometheus text format 0.0.4. */
  exposition(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}

export const metrics = new GatewayMetrics()
