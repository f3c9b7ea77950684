import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { ConsoleSessions } from "../admin/console/sessions.js"
import type { Approvals } from "../approvals/service.js"
import type { AuthBaseServices } from "../auth/layer.js"
import { type BearerVerifier, BearerVerifierLive } from "../bearer/verifier.js"
import { Config, type LoadedConfig } from "../config/service.js"
import type { ConfigKey } from "../crypto/config-key.js"
import type { Sealer } from "../crypto/sealer.js"
import type { Signer } from "../crypto/signer.js"
import type { Archive } from "../events/archive/service.js"
import type { ArchiveDelivery } from "../events/delivery-status.js"
import type { Notifier } from "../events/notifier.js"
import type { DirectorySnapshots } from "../identity/directory/apply.js"
import type { LocalAccountAdmin } from "../identity/local/account-admin.js"
import type { IdentityProviders } from "../identity/providers/service.js"
import { type UpstreamSignIn, UpstreamSignInLive } from "../identity/upstream/service.js"
import { GatewayToolsLive } from "../mcp/calls/approval-tools.js"
import { type ToolCalls, ToolCallsLive } from "../mcp/calls/tool-calls.js"
import type { BackendCatalog } from "../mcp/catalog/backend-catalog.js"
import { GatewayTools } from "../mcp/catalog/gateway-tools.js"
import { DirectPathEnabled, type McpPost, McpPostLive } from "../mcp/edge/post.js"
import { type McpEndpoint, McpEndpointLive } from "../mcp/edge/sdk-endpoint.js"
import type { AnswerBudgetTag } from "../mcp/upstream/answer-budget.js"
import { type Backends, BackendsLive, PreviousCatalogs } from "../mcp/upstream/backends.js"
import type { Tracing } from "../observability/tracing.js"
import type { AccessState } from "../policy/access-state.js"
import { type PolicyEngine, PolicyEngineLive } from "../policy/engine.js"
import { GatewayToolRules } from "../policy/tool.js"
import type { PolicyWrites } from "../policy/writes.js"
import type { SourceApplier } from "../sources/applier.js"
import type { ConfigChanges } from "../sources/changes.js"
import { HttpToolsLive } from "../sources/http/live.js"
import type { HttpTools } from "../sources/http/service.js"
import type { ApprovalEventRepo } from "../store/approval-events.js"
import type { ApprovalRepo } from "../store/approvals.js"
import type { AuditEventRepo } from "../store/audit-events.js"
import type { DirectoryRepo } from "../store/directory.js"
import type { GroupRepo } from "../store/groups.js"
import type { StoreHealth } from "../store/health.js"
import type { IdentityProviderRepo } from "../store/identity-providers.js"
import type { ManagedSourceRepo } from "../store/managed-sources.js"
import type { MembershipRepo } from "../store/memberships.js"
import type { NotificationDeliveryRepo } from "../store/notification-deliveries.js"
import type { PolicyVersionRepo } from "../store/policy-version.js"
import type { SigningKeyRepo } from "../store/signing-keys.js"
import type { ProposalRepo } from "../store/source-proposals.js"
import type { Store } from "../store/store.js"
import { type Readiness, ReadinessLive } from "./readiness.js"
import type { GenerationRequests } from "./requests-in-flight.js"

/**
 * Services that live for the whole process. Their configuration is static (`storage`, `auth`:
 * docs/configuration.md, "Static or reloadable"), so every generation shares them instead of reopening the
 * database.
 */
export type BaseServices =
  | Store
  | SqlClient.SqlClient
  | StoreHealth
  | ConfigKey
  | Sealer
  | SigningKeyRepo
  | Signer
  | AuthBaseServices
  | AccessState
  | PolicyWrites
  | GroupRepo
  | MembershipRepo
  | PolicyVersionRepo
  | AuditEventRepo
  | IdentityProviders
  | IdentityProviderRepo
  | LocalAccountAdmin
  | DirectorySnapshots
  | DirectoryRepo
  | Approvals
  | ApprovalRepo
  | AnswerBudgetTag
  | ApprovalEventRepo
  | Archive
  | NotificationDeliveryRepo
  | Notifier
  | ArchiveDelivery
  | ManagedSourceRepo
  | ProposalRepo
  | SourceApplier
  | ConfigChanges
  | Tracing
  | ConsoleSessions

/** What one generation provides to its routes. */
export type GenerationServices =
  | BaseServices
  | GenerationRequests
  | Config
  | Readiness
  | BearerVerifier
  | Backends
  | GatewayTools
  | GatewayToolRules
  | HttpTools
  | PolicyEngine
  | McpEndpoint
  | McpPost
  | ToolCalls
  | UpstreamSignIn

/** Services a test may replace in a generation (e.g. a PolicyEngine fake for tests of the data plane). */
export interface GenerationOverrides {
  readonly policyEngine?: Layer.Layer<PolicyEngine, never, Config | GatewayToolRules | BaseServices>
  readonly gatewayTools?: Layer.Layer<GatewayTools>
  /**
   * How HTTP tools' calls are sent (src/sources/http/service.ts); by default `HttpToolsLive`, with the
   * system's trust anchors (tests give one that trusts their CA).
   */
  readonly httpTools?: Layer.Layer<HttpTools>
  /** `false`: every POST /mcp goes to the MCP SDK's handler (tests compare the two paths' answers). */
  readonly directPath?: boolean
}

/**
 * The reloadable part: rebuilt from each validated configuration. `previous` is the catalogs of the
 * generation being replaced, which an optional backend that is down may inherit (docs/mcp.md, "Backends");
 * a required backend that cannot connect fails the build, so the old generation keeps serving.
 */
export const generationLayer = (
  loaded: LoadedConfig,
  previous: ReadonlyMap<string, BackendCatalog> = new Map(),
  overrides: GenerationOverrides = {}
): Layer.Layer<
  Exclude<GenerationServices, BaseServices | GenerationRequests>,
  unknown,
  BaseServices | GenerationRequests
> => {
  const config = Layer.succeed(Config, loaded)
  const backends = BackendsLive.pipe(Layer.provide(Layer.succeed(PreviousCatalogs, previous)))
  // The policy sees the gateway's own tools as rules (src/policy/tool.ts): the same tools, by another tag.
  const rules = Layer.effect(GatewayToolRules, GatewayTools)
  const core = Layer.mergeAll(BearerVerifierLive, backends, overrides.policyEngine ?? PolicyEngineLive).pipe(
    Layer.provideMerge(rules),
    Layer.provideMerge(overrides.gatewayTools ?? GatewayToolsLive),
    Layer.provideMerge(overrides.httpTools ?? HttpToolsLive)
  )
  const endpoint = McpPostLive.pipe(
    Layer.provide(Layer.succeed(DirectPathEnabled, overrides.directPath ?? true)),
    Layer.provideMerge(McpEndpointLive),
    Layer.provideMerge(ToolCallsLive)
  )
  return Layer.mergeAll(endpoint, ReadinessLive, UpstreamSignInLive).pipe(
    Layer.provideMerge(core),
    Layer.provideMerge(config)
  )
}
