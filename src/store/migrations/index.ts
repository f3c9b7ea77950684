import type { SqlClient } from "@effect/sql"
import type { Effect } from "effect"
import gatewayMeta from "./0001_gateway_meta.js"
import signingKeys from "./0002_signing_keys.js"
import users from "./0003_users.js"
import localCredentials from "./0004_local_credentials.js"
import browserSessions from "./0005_browser_sessions.js"
import sessions from "./0006_sessions.js"
import refreshTokens from "./0007_refresh_tokens.js"
import clientGrants from "./0008_client_grants.js"
import accessPolicy from "./0009_access_policy.js"
import identityProviders from "./0010_identity_providers.js"
import directoryVersions from "./0011_directory_versions.js"
import approvals from "./0012_approvals.js"
import directoryMemberships from "./0013_directory_memberships.js"
import approvalsOpen from "./0014_approvals_open.js"
import groupNameKeys from "./0015_group_name_keys.js"
import approvalEvents from "./0016_approval_events.js"
import notificationDeliveries from "./0017_notification_deliveries.js"
import auditArchive from "./0018_audit_archive.js"
import directoryResetAndRequester from "./0019_directory_reset_and_requester.js"
import managedSources from "./0020_managed_sources.js"
import localAccounts from "./0021_local_accounts.js"
import consoleListings from "./0022_console_listings.js"
import lookKeys from "./0023_look_keys.js"

/** The Migrator's bookkeeping table (named so it cannot clash with another tool's migrations). */
export const MIGRATIONS_TABLE = "gateway_migrations"

/**
 * Every migration of this release; together they ARE schema version 10 (docs/storage.md: fresh
 * deployments only, no migration workflow). To add a table: add `NNNN_name.ts` beside this file and
 * register it here with the next number. Keys follow the Migrator's `<id>_<name>` convention.
 */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_gateway_meta": gatewayMeta,
  "0002_signing_keys": signingKeys,
  "0003_users": users,
  "0004_local_credentials": localCredentials,
  "0005_browser_sessions": browserSessions,
  "0006_sessions": sessions,
  "0007_refresh_tokens": refreshTokens,
  "0008_client_grants": clientGrants,
  "0009_access_policy": accessPolicy,
  "0010_identity_providers": identityProviders,
  "0011_directory_versions": directoryVersions,
  "0012_approvals": approvals,
  "0013_directory_memberships": directoryMemberships,
  "0014_approvals_open": approvalsOpen,
  "0015_group_name_keys": groupNameKeys,
  "0016_approval_events": approvalEvents,
  "0017_notification_deliveries": notificationDeliveries,
  "0018_audit_archive": auditArchive,
  "0019_directory_reset_and_requester": directoryResetAndRequester,
  "0020_managed_sources": managedSources,
  "0021_local_accounts": localAccounts,
  "0022_console_listings": consoleListings,
  "0023_look_keys": lookKeys
}
