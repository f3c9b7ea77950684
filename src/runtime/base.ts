import { Layer, type Redacted } from "effect"
import { ConsoleSessions } from "../admin/console/sessions.js"
import { ApprovalMaintenance } from "../approvals/maintenance.js"
import { Approvals } from "../approvals/service.js"
import { authBaseLayer } from "../auth/layer.js"
import type { GatewayConfig } from "../config/schema.js"
import { ConfigKey } from "../crypto/config-key.js"
import { Sealer } from "../crypto/sealer.js"
import { Signer } from "../crypto/signer.js"
import { Archive, ArchiveDeliveryLive, ArchiveWorker, archiveSettingsLayer } from "../events/archive/service.js"
import { NotifierLive } from "../events/notifier.js"
import { DirectorySnapshots } from "../identity/directory/apply.js"
import { LocalAccountAdmin } from "../identity/local/account-admin.js"
import { IdentityProviders } from "../identity/providers/service.js"
import { AnswerBudgetTag } from "../mcp/upstream/answer-budget.js"
import { tracingLayer } from "../observability/tracing.js"
import { AccessSettingsTag, AccessStateLive } from "../policy/access-state.js"
import { accessSettingsOf } from "../policy/settings.js"
import { PolicyWrites } from "../policy/writes.js"
import { SourceApplierLive } from "../sources/applier.js"
import { ConfigChangesLive } from "../sources/changes-live.js"
import { ApprovalEventRepo } from "../store/approval-events.js"
import { ApprovalRepo } from "../store/approvals.js"
import { ArchiveRepo } from "../store/archive-entries.js"
import { AuditEventRepo } from "../store/audit-events.js"
import { DirectoryRepo } from "../store/directory.js"
import { GroupRepo } from "../store/groups.js"
import { StoreHealth } from "../store/health.js"
import { IdentityProviderRepo } from "../store/identity-providers.js"
import { servingStoreLayer } from "../store/instance-lock.js"
import { StoreLive } from "../store/live.js"
import { ManagedSourceRepo } from "../store/managed-sources.js"
import { MembershipRepo } from "../store/memberships.js"
import { NotificationDeliveryRepo } from "../store/notification-deliveries.js"
import { PolicyVersionRepo } from "../store/policy-version.js"
import { SigningKeyRepo } from "../store/signing-keys.js"
import { ProposalRepo } from "../store/source-proposals.js"

/** The repositories of the access policy: groups, memberships, directory versions, the audit trail and the version counter. */
export const policyRepositories = Layer.mergeAll(
  GroupRepo.Default,
  MembershipRepo.Default,
  PolicyVersionRepo.Default,
  AuditEventRepo.Default,
  DirectoryRepo.Default
)

/**
 * The process-wide services: the configuration key, the store (opened, checked and migrated before
 * anything else runs) and its health (src/store/health.ts), the signer, the authorization server's
 * repositories, pending logins and session check, the stored access policy and identity connections,
 * the count of memory held for backend answers. Their settings are static, so generations share them.
 */
export const baseLayer = (
  config: GatewayConfig,
  key: Redacted.Redacted<Uint8Array>,
  { serving = false }: { readonly serving?: boolean } = {}
) => {
  const sealer = Sealer.Default.pipe(Layer.provideMerge(ConfigKey.layer(key)))
  const opened = StoreHealth.Default.pipe(Layer.provideMerge(StoreLive(config.storage)), Layer.provideMerge(sealer))
  // `serve` says which database it opened and holds the instance lock before anything else starts.
  const store = serving ? servingStoreLayer(config.storage).pipe(Layer.provideMerge(opened)) : opened
  const signer = Signer.Default.pipe(Layer.provideMerge(SigningKeyRepo.Default), Layer.provideMerge(store))
  const access = PolicyWrites.Default.pipe(
    Layer.provideMerge(AccessStateLive),
    Layer.provideMerge(policyRepositories),
    Layer.provide(Layer.succeed(AccessSettingsTag, accessSettingsOf(config)))
  )
  // The stored identity connections: applied at once, so process-wide like the policy.
  const connections = IdentityProviders.Default.pipe(Layer.provideMerge(IdentityProviderRepo.Default))
  // Write approvals outlive reloads: their store, the service and its maintenance are process-wide;
  // so are approval webhooks (static settings): the worker lives as long as the process.
  const delivery = NotifierLive(config).pipe(Layer.provideMerge(NotificationDeliveryRepo.Default))
  const approvals = Layer.merge(ApprovalMaintenance(config), delivery).pipe(
    Layer.provideMerge(Approvals.Default),
    Layer.provideMerge(Layer.merge(ApprovalRepo.Default, ApprovalEventRepo.Default))
  )
  // The audit archive reads the approval outbox; its settings are static (`admin`), so it is process-wide
  // too. It reports its own part of the delivery status.
  const archive = Layer.merge(ArchiveWorker, ArchiveDeliveryLive).pipe(
    Layer.provideMerge(Archive.Default),
    Layer.provide(Layer.merge(ArchiveRepo.Default, archiveSettingsLayer(config)))
  )
  // Managed tool sources (docs/tool-sources.md): their store, the one path that applies a change (the
  // Generations service attaches itself), and the proposals under review.
  const sources = ConfigChangesLive.pipe(
    Layer.provideMerge(SourceApplierLive),
    Layer.provideMerge(Layer.merge(ManagedSourceRepo.Default, ProposalRepo.Default))
  )
  // Memory held for backend answers is counted once per process, across generations.
  return Layer.mergeAll(
    connections,
    sources,
    DirectorySnapshots.Default,
    // Local accounts people are given (docs/local-accounts.md): administrators' changes and enrolment links.
    LocalAccountAdmin.Default,
    archive.pipe(Layer.provideMerge(approvals)),
    AnswerBudgetTag.Live,
    // Traces leave through one exporter per process (`observability.otlp_endpoint` is static).
    tracingLayer(config),
    // Console sign-ins outlive a reload (docs/console.md, "Sessions").
    ConsoleSessions.Default
  ).pipe(Layer.provideMerge(access), Layer.provideMerge(authBaseLayer), Layer.provideMerge(signer))
}
