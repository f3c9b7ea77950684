import { SqlClient } from "@effect/sql"
import { Clock, Data, Effect, Option, Redacted } from "effect"
import { securityEvent } from "../../events/security-log.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { BrowserSessionRepo } from "../../store/browser-sessions.js"
import { ADMINISTRATORS_GROUP_ID } from "../../store/groups.js"
import { LocalCredentialRepo } from "../../store/local-credentials.js"
import { MembershipRepo } from "../../store/memberships.js"
import { PolicyVersionRepo } from "../../store/policy-version.js"
import { SessionRepo } from "../../store/sessions.js"
import { UserRepo } from "../../store/users.js"
import { generatePassword, hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./password.js"

/** The built-in administrator's sign-in name. */
export const ADMIN_USERNAME = "admin"

export class AdminInitError extends Data.TaggedError("AdminInitError")<{ readonly message: string }> {}

export interface InitAdminRequest {
  /** Create (false) or recover (true) the administrator. */
  readonly reset: boolean
  /** Change the password: with `reset`, or implied when creating. */
  readonly resetPassword: boolean
  /** Clear the second factor; the next sign-in enrolls a new one. */
  readonly resetMfa: boolean
  /** The password to set; generated when absent. */
  readonly password: Redacted.Redacted<string> | undefined
}

export interface InitAdminResult {
  readonly created: boolean
  /** Set when the command generated the password: shown once, never stored in clear. */
  readonly generatedPassword: Redacted.Redacted<string> | undefined
  readonly revokedSessions: number
}

export const checkPasswordPolicy = (password: Redacted.Redacted<string>): AdminInitError | undefined => {
  const length = [...Redacted.value(password)].length
  if (length < MIN_PASSWORD_LENGTH) {
    return new AdminInitError({ message: `the password must be at least ${MIN_PASSWORD_LENGTH} characters` })
  }
  if (length > MAX_PASSWORD_LENGTH) {
    return new AdminInitError({ message: `the password must be at most ${MAX_PASSWORD_LENGTH} characters` })
  }
  return undefined
}

/**
 * `gateway init-admin`: creates the built-in local administrator, or with `--reset` recovers it with
 * the same configuration key and database: a new password and/or a cleared second factor, the account
 * enabled again and back in the Administrators group, and every session it had revoked (whoever lost
 * access may not be the only holder). A running gateway notices the change within seconds
 * (`policy_version`, src/policy/access-state.ts).
 */
export const initAdmin = (request: InitAdminRequest) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(apply(request))).pipe(
    Effect.catchTag("SqlError", Effect.die),
    Effect.withSpan("initAdmin")
  )

/** The administrator is in the built-in Administrators group (role admin, no business tools). */
const joinAdministrators = (userId: string, at: Date) =>
  Effect.gen(function* () {
    const memberships = yield* MembershipRepo
    yield* (yield* PolicyVersionRepo).bump
    const direct = (yield* memberships.forUser(userId))
      .filter((row) => row.source === "direct")
      .map((row) => row.group_id)
    if (direct.includes(ADMINISTRATORS_GROUP_ID)) return
    yield* memberships.replace(userId, "direct", [...direct, ADMINISTRATORS_GROUP_ID], at)
    yield* (yield* AuditEventRepo).insert({
      at,
      actorId: undefined,
      action: "identity.user_updated",
      targetKind: "user",
      targetId: userId,
      detail: { groups_added: [ADMINISTRATORS_GROUP_ID], groups_removed: [], by: "gateway init-admin" },
      requestId: undefined
    })
  })

/** `init-admin`'s own change in `audit_events` (no actor: whoever ran the command on the host). */
const recordRecovery = (action: string, userId: string, at: Date, detail: Record<string, unknown>) =>
  Effect.flatMap(AuditEventRepo, (audit) =>
    audit.insert({
      at,
      actorId: undefined,
      action,
      targetKind: "user",
      targetId: userId,
      detail: { ...detail, by: "gateway init-admin" },
      requestId: undefined
    })
  )

const apply = (request: InitAdminRequest) =>
  Effect.gen(function* () {
    const users = yield* UserRepo
    const credentials = yield* LocalCredentialRepo
    const sessions = yield* SessionRepo
    const browserSessions = yield* BrowserSessionRepo
    const now = new Date(yield* Clock.currentTimeMillis)
    const existing = yield* users.findBuiltinAdmin
    const password = request.password ?? generatePassword()
    const generatedPassword = request.password === undefined ? password : undefined
    // What cannot be done at all is said first, whatever password came with it.
    if (Option.isNone(existing) && request.reset) {
      return yield* new AdminInitError({
        message: "there is no built-in administrator in this database yet: run `gateway init-admin` without --reset"
      })
    }
    if (Option.isSome(existing) && !request.reset) {
      return yield* new AdminInitError({
        message: "the built-in administrator already exists: use `gateway init-admin --reset` to recover it"
      })
    }
    if (request.password !== undefined) {
      const problem = checkPasswordPolicy(request.password)
      if (problem !== undefined) return yield* problem
    }

    if (Option.isNone(existing)) {
      const id = yield* users.insertLocal({
        kind: "builtin_admin",
        username: ADMIN_USERNAME,
        displayName: "Administrator",
        at: now
      })
      yield* credentials.setPassword(id, yield* hashPassword(password), now)
      yield* joinAdministrators(id, now)
      yield* recordRecovery("identity.administrator_created", id, now, {})
      yield* securityEvent("auth.administrator_created", { user_id: id })
      return { created: true, generatedPassword, revokedSessions: 0 } satisfies InitAdminResult
    }
    const id = existing.value.id
    if (request.resetPassword) yield* credentials.setPassword(id, yield* hashPassword(password), now)
    if (request.resetMfa) yield* credentials.clearTotp(id)
    yield* users.setStatus(id, "enabled", now)
    yield* joinAdministrators(id, now)
    const revokedSessions = yield* sessions.revokeForUser(id, "administrator_reset", now)
    yield* browserSessions.revokeForUser(id, now)
    // In the audit trail too: the running gateway's log never sees this command's line (its stderr).
    yield* recordRecovery("identity.administrator_reset", id, now, {
      password_reset: request.resetPassword,
      mfa_reset: request.resetMfa,
      sessions_revoked: revokedSessions
    })
    yield* securityEvent("auth.administrator_reset", {
      user_id: id,
      password_reset: request.resetPassword,
      mfa_reset: request.resetMfa,
      sessions_revoked: revokedSessions
    })
    return {
      created: false,
      generatedPassword: request.resetPassword ? generatedPassword : undefined,
      revokedSessions
    } satisfies InitAdminResult
  })
