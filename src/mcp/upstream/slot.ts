import type { Client } from "@modelcontextprotocol/client"
import { Context } from "effect"
import type { BackendConfig } from "../../config/schema.js"
import type { BackendCatalog } from "../catalog/backend-catalog.js"
import type { BackendChannel, BackendSession } from "./channel.js"

/**
 * The live state of one configured backend in one generation. Mutated only by that backend's worker
 * fiber (and the build step before it starts); read synchronously by requests.
 */
export interface BackendSlot {
  readonly config: BackendConfig
  readonly identity: string
  status: "connecting" | "ready" | "unavailable"
  client: Client | undefined
  /** Set with `client`: how forwarded calls reach the backend. */
  channel: BackendChannel | undefined
  /** Set with `client`: the session it negotiated (a 2025-era backend's session id, if it gave one). */
  session: (() => BackendSession | undefined) | undefined
  catalog: BackendCatalog | undefined
  /** The catalog came from the previous generation (docs/mcp.md, "Backends"); never counts as ready. */
  inherited: boolean
  /** When its catalog was last fetched (ms since epoch); undefined before the first (docs/operations.md, "Metrics"). */
  catalogAt?: number | undefined
  /** The class of its last connection or probe failure (`connect`, `timeout`, `http_503`, …); undefined before any. */
  lastError?: string | undefined
}

/** `called`: a caller wanted the backend while it was unavailable (docs/mcp.md, "Backends"). */
export type Wakeup = "changed" | "failed" | "called"

/** Capped exponential backoff for reconnect attempts: 250 ms, 500 ms, 1 s … at most 30 s. */
export const reconnectDelayMs = (attempt: number): number => Math.min(30_000, 250 * 2 ** Math.min(attempt, 7))

export interface ReconnectTimingShape {
  /** The background schedule while no caller wants the backend, by failed attempts so far. */
  readonly delayMs: (attempt: number) => number
  /**
   * A call to an unavailable backend starts an attempt at once, but never sooner than this after the
   * previous attempt began: a flood of calls is one attempt, and a dead backend is not hammered.
   */
  readonly calledSpacingMs: number
}

/** The reconnect timings; a Reference so tests can stand at any point of the backoff (its 30 s cap, say). */
export class ReconnectTiming extends Context.Reference<ReconnectTiming>()("gateway/ReconnectTiming", {
  defaultValue: (): ReconnectTimingShape => ({ delayMs: reconnectDelayMs, calledSpacingMs: 250 })
}) {}
