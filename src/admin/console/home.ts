import { Effect } from "effect"
import { html } from "../../auth/pages/html.js"
import type { StatusReport } from "../status.js"
import type { ConsoleRoute } from "./route.js"

interface Queue {
  readonly enabled: boolean
  readonly pending: number | null
  readonly failed: number | null
  readonly oldest_pending_age_seconds: number | null
  readonly last_error: string | null
}

const queueRow = (name: string, queue: Queue) =>
  html`<tr><th scope="row">${name}</th><td>${queue.enabled ? "on" : "off"}</td><td>${
    queue.pending ?? "—"
  }</td><td>${queue.failed ?? "—"}</td><td>${queue.oldest_pending_age_seconds ?? "—"}</td><td>${
    queue.last_error ?? "—"
  }</td></tr>`

const state = (ok: boolean, text: string) => html`<span class="${ok ? "state-ok" : "state-bad"}">${text}</span>`

/**
 * `/console`, the overview: the health report `GET /api/v1/status` answers (src/admin/status.ts, the
 * same service, not an HTTP call) — readiness, the generation, each backend's state and last error
 * class, both delivery queues, the store and its latency.
 */
export const homeRoute = (report: Effect.Effect<StatusReport>): ConsoleRoute => ({
  method: "GET",
  path: "/console",
  handler: () =>
    Effect.map(report, (status) => ({
      _tag: "Page" as const,
      title: "Overview",
      body: html`<p>Gateway ${status.version}, generation ${status.generation.id}: ${state(
        status.ready,
        status.ready ? "ready" : "not ready"
      )}.</p>
<h2>Backends</h2>
${
  status.backends.length === 0
    ? html`<p>No backends are configured.</p>`
    : html`<table><caption class="muted">Each backend's connection and catalog</caption>
<thead><tr><th scope="col">Backend</th><th scope="col">Required</th><th scope="col">State</th><th scope="col">Last error</th><th scope="col">Tools</th><th scope="col">Catalog age (s)</th></tr></thead>
<tbody>${status.backends.map(
        (backend) =>
          html`<tr><th scope="row">${backend.id}</th><td>${backend.required ? "yes" : "no"}</td><td>${state(
            backend.state === "ready",
            backend.state
          )}${backend.inherited_catalog ? " (previous catalog)" : ""}</td><td>${backend.last_error ?? "—"}</td><td>${
            backend.tools ?? "—"
          }</td><td>${backend.catalog_age_seconds ?? "—"}</td></tr>`
      )}</tbody></table>`
}
<h2>Delivery queues</h2>
<table><thead><tr><th scope="col">Queue</th><th scope="col">Enabled</th><th scope="col">Pending</th><th scope="col">Failed</th><th scope="col">Oldest pending (s)</th><th scope="col">Last error</th></tr></thead>
<tbody>${[queueRow("Approval webhooks", status.outboxes.notifications), queueRow("Audit archive", status.outboxes.archive)]}</tbody></table>
<h2>Store</h2>
<p>${state(status.store.ready, status.store.ready ? "available" : `unavailable (${status.store.reason ?? "unknown"})`)}; one query took ${
        status.store.latency_ms === null ? "more than 2 s or failed" : `${status.store.latency_ms} ms`
      }. Traces are ${status.tracing.enabled ? "exported" : "not exported"}.</p>`
    }))
})
