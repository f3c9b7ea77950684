import { Duration, Redacted } from "effect"
import { isRecord } from "../json.js"
import type { GatewayConfig } from "./schema.js"

/**
 * docs/configuration.md, "Static or reloadable", as data: the YAML paths a reload (SIGHUP) may not change.
 * A candidate whose static paths differ is rejected before anything is built; the running generation keeps
 * serving.
 *
 * - `server.listen`, `server.public_url`, all of `auth` (including `auth.sso`), `client_authorization`
 *   and `admin`: the listeners, the token contract and the administration they set up live for the process.
 * - `storage`: chosen at deployment creation (docs/storage.md); a reload must not point a
 *   running gateway at another database.
 * - `approvals.retention`: the approvals' maintenance (expiry tick, tombstones) is process-wide and
 *   reads it once at start.
 * - `log_level`: the logger is installed once per process (src/cli/serve.ts), so a reload could only
 *   ignore a change silently; rejecting it says "restart" instead.
 * - `observability.metrics_listen`, `observability.otlp_endpoint`, `observability.service_instance_id`,
 *   `observability.trace_queue_size`: the metrics listener and the trace exporter live for the process.
 * - Reloadable: `observability.trust_incoming_trace`, `allowed_origins`, `request_timeout`, `drain_timeout` and `backends` — everything not
 *   listed here.
 *
 * `vault` fields (restart-only by the original contract) have no key in this schema; add them here when they do.
 */
export const staticFields = [
  "server.listen",
  "server.public_url",
  "storage",
  "log_level",
  "auth",
  "client_authorization",
  "admin",
  "approvals.retention",
  "observability.metrics_listen",
  "observability.otlp_endpoint",
  "observability.service_instance_id",
  "observability.trace_queue_size"
] as const

export type StaticField = (typeof staticFields)[number]

const at = (config: GatewayConfig, path: string): unknown =>
  path.split(".").reduce<unknown>((value, key) => (isRecord(value) ? value[key] : undefined), config)

/** Structural equality over decoded config values; secrets by revealed value, durations by length. */
export const sameValue = (a: unknown, b: unknown): boolean => {
  if (Redacted.isRedacted(a) || Redacted.isRedacted(b)) {
    return Redacted.isRedacted(a) && Redacted.isRedacted(b) && sameValue(Redacted.value(a), Redacted.value(b))
  }
  if (Duration.isDuration(a) || Duration.isDuration(b)) {
    return Duration.isDuration(a) && Duration.isDuration(b) && Duration.equals(a, b)
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameValue(item, b[i]))
  }
  if (isRecord(a) && isRecord(b)) {
    // An absent optional key and one explicitly undefined mean the same configuration.
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    return [...keys].every((key) => sameValue(a[key], b[key]))
  }
  return Object.is(a, b)
}

/** The static paths whose values differ between two configurations; empty means the reload may proceed. */
export const staticChanges = (before: GatewayConfig, after: GatewayConfig): ReadonlyArray<StaticField> =>
  staticFields.filter((path) => !sameValue(at(before, path), at(after, path)))
