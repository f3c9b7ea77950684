import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import { type BearerVerifier, BearerVerifierLive } from "../auth/bearer.js"
import type { AuthBaseServices } from "../auth/layer.js"
import { Config, type LoadedConfig } from "../config/service.js"
import type { ConfigKey } from "../crypto/config-key.js"
import type { Sealer } from "../crypto/sealer.js"
import type { Signer } from "../crypto/signer.js"
import { type Backends, BackendsLive, PreviousCatalogs } from "../mcp/backends.js"
import type { BackendCatalog } from "../mcp/catalog.js"
import { type CatalogFilter, ScopeCatalogFilter } from "../mcp/catalog-filter.js"
import { type McpEndpoint, McpEndpointLive } from "../mcp/endpoint.js"
import { type McpPost, McpPostLive } from "../mcp/post.js"
import { type ToolCalls, ToolCallsLive } from "../mcp/tool-calls.js"
import type { SigningKeyRepo } from "../store/signing-keys.js"
import type { Store } from "../store/store.js"
import { type Readiness, ReadinessLive } from "./readiness.js"

/**
 * Services that live for the whole process. Their configuration is static (spec Versioning 7:
 * `storage`, `auth`), so every generation shares them instead of reopening the database.
 */
export type BaseServices = Store | SqlClient.SqlClient | ConfigKey | Sealer | SigningKeyRepo | Signer | AuthBaseServices

/** What one generation provides to its routes. */
export type GenerationServices =
  | BaseServices
  | Config
  | Readiness
  | BearerVerifier
  | Backends
  | CatalogFilter
  | McpEndpoint
  | McpPost
  | ToolCalls

/**
 * The reloadable part: rebuilt from each validated configuration. `previous` is the catalogs of the
 * generation being replaced, which an optional backend that is down may inherit (spec Versioning 8);
 * a required backend that cannot connect fails the build, so the old generation keeps serving.
 */
export const generationLayer = (
  loaded: LoadedConfig,
  previous: ReadonlyMap<string, BackendCatalog> = new Map()
): Layer.Layer<Exclude<GenerationServices, BaseServices>, unknown, BaseServices> => {
  const config = Layer.succeed(Config, loaded)
  const backends = BackendsLive.pipe(Layer.provide(Layer.succeed(PreviousCatalogs, previous)))
  const core = Layer.mergeAll(BearerVerifierLive, backends, ScopeCatalogFilter)
  const endpoint = McpPostLive.pipe(Layer.provideMerge(McpEndpointLive), Layer.provideMerge(ToolCallsLive))
  return Layer.mergeAll(endpoint, ReadinessLive).pipe(Layer.provideMerge(core), Layer.provideMerge(config))
}
