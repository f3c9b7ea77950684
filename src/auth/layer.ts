import { Layer } from "effect"
import { StepUps } from "../approvals/step-up.js"
import type { SessionGuard } from "../bearer/caller.js"
import { SecurityLog } from "../events/security-log.js"
import { DirectoryPushGuard } from "../identity/directory/push-guard.js"
import { LdapSignIn } from "../identity/ldap/sign-in.js"
import { LocalAccounts } from "../identity/local/accounts.js"
import { ConnectionTests } from "../identity/providers/connection-tests.js"
import { BrowserSessionRepo } from "../store/browser-sessions.js"
import { ClientGrantRepo } from "../store/client-grants.js"
import { EnrolmentLinkRepo } from "../store/enrolment-links.js"
import { LocalCredentialRepo } from "../store/local-credentials.js"
import { RefreshTokenRepo } from "../store/refresh-tokens.js"
import { SessionCache } from "../store/session-cache.js"
import { SessionRepo } from "../store/sessions.js"
import { UserRepo } from "../store/users.js"
import { SessionMaintenance } from "./maintenance.js"
import { PendingAuthorizations } from "./pending.js"
import { SessionGuardLive } from "./session-guard.js"
import { LoginThrottle } from "./throttle.js"

/** The repositories of people, sessions and grants; one `SessionCache` shared by all of them. */
export const authRepositories = Layer.mergeAll(
  UserRepo.DefaultWithoutDependencies,
  SessionRepo.DefaultWithoutDependencies,
  LocalCredentialRepo.Default,
  BrowserSessionRepo.Default,
  RefreshTokenRepo.Default,
  ClientGrantRepo.Default,
  EnrolmentLinkRepo.Default
).pipe(Layer.provideMerge(SessionCache.Default))

/**
 * The authorization server's process-wide services. Pending transactions, codes, throttling counters
 * and the bound on concurrent LDAP sign-ins are in memory and must outlive a reload (auth settings are
 * static), so they live here and not in a generation; so does the `SessionGuard` /mcp calls on every
 * request.
 */
export const authBaseLayer = Layer.mergeAll(
  SessionGuardLive,
  LocalAccounts.Default,
  PendingAuthorizations.Default,
  ConnectionTests.Default,
  DirectoryPushGuard.Default,
  StepUps.Default,
  // LDAP sign-ins count their failures in the local sign-in's throttle: one instance for both.
  LdapSignIn.Default.pipe(Layer.provideMerge(LoginThrottle.Default)),
  SessionMaintenance
).pipe(Layer.provideMerge(authRepositories), Layer.provideMerge(SecurityLog.Default))

export type AuthBaseServices =
  | SessionGuard
  | LocalAccounts
  | PendingAuthorizations
  | ConnectionTests
  | DirectoryPushGuard
  | StepUps
  | LoginThrottle
  | LdapSignIn
  | SecurityLog
  | SessionCache
  | UserRepo
  | SessionRepo
  | LocalCredentialRepo
  | BrowserSessionRepo
  | RefreshTokenRepo
  | ClientGrantRepo
  | EnrolmentLinkRepo
