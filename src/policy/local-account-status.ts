import { Effect, Option } from "effect"
import type { BrowserSessionRepo } from "../store/browser-sessions.js"
import type { EnrolmentLinkRepo } from "../store/enrolment-links.js"
import type { LocalCredentialRepo } from "../store/local-credentials.js"
import type { RevokeReason, SessionRepo } from "../store/sessions.js"
import type { UserRow, UserStatus } from "../store/users.js"

export interface LocalAccountRepos {
  readonly links: EnrolmentLinkRepo
  readonly credentials: LocalCredentialRepo
  readonly sessions: SessionRepo
  readonly browserSessions: BrowserSessionRepo
}

/**
 * What enabling and disabling a local account means (docs/local-accounts.md, "Life of an account"):
 * one set of rules for both ways an administrator reaches its status — LocalAccountAdmin
 * (`/api/v1/local-accounts/{id}/disable|enable`, the console's local accounts) and
 * PolicyWrites.updateUser (`PUT /api/v1/identities/{id}`, the console's person form). Each runs inside
 * the caller's transaction, after its conditional write of the status.
 */
export const localAccountStatus = (repos: LocalAccountRepos) => {
  /** Ends every session, refresh token and browser session of the person; the number of sessions ended. */
  const endSessions = (id: string, reason: RevokeReason, at: Date) =>
    Effect.gen(function* () {
      const revoked = yield* repos.sessions.revokeForUser(id, reason, at)
      yield* repos.browserSessions.revokeForUser(id, at)
      return revoked
    })

  /**
   * The status enabling gives: `enabled` once the person's factors are set; an account that never
   * finished its enrolment waits for it again (`pending`; a reset gives it a new link).
   */
  const statusOnEnable = (user: UserRow) =>
    Effect.map(repos.credentials.find(user.id), (found): UserStatus => (Option.isSome(found) ? "enabled" : "pending"))

  /**
   * After the account was written `disabled`: its enrolment link is deleted, and unless it was disabled
   * already, every session, refresh token and browser session ends. The number of sessions ended.
   */
  const afterDisable = (user: UserRow, at: Date) =>
    Effect.gen(function* () {
      yield* repos.links.remove(user.id)
      return user.status === "disabled" ? 0 : yield* endSessions(user.id, "user_disabled", at)
    })

  return { endSessions, statusOnEnable, afterDisable } as const
}
