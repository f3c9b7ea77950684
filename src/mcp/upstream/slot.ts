import type { Client } from "@modelcontextprotocol/client"
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
}

export type Wakeup = "changed" | "failed"

/** Capped exponential backoff for reconnect attempts: 250 ms, 500 ms, 1 s … at most 30 s. */
export const reconnectDelayMs = (attempt: number): number => Math.min(30_000, 250 * 2 ** Math.min(attempt, 7))
