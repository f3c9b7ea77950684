import { Effect } from "effect"
import type { AuditEventRepo } from "../store/audit-events.js"
import { ADMINISTRATORS_GROUP_ID } from "../store/groups.js"
import type { MembershipRepo } from "../store/memberships.js"
import type { UserRepo } from "../store/users.js"

export interface NewEnterpriseIdentity {
  readonly namespace: string
  readonly subject: string
  readonly displayName: string
  /** The subject is in `auth.sso.bootstrap_subjects`. */
  readonly bootstrap: boolean
}

/**
 * Creates an enterprise identity the first time its namespace and subject are seen — by an external
 * issuer's token or an enterprise sign-in (docs/access-policy.md, "Users"): pending, or for a bootstrap
 * subject enabled and in the built-in Administrators group (which grants no business tools), at this
 * creation only. Recorded as `identity.user_created`. Runs inside the caller's policy transaction.
 */
export const createEnterpriseUser = (
  repos: {
    readonly users: typeof UserRepo.Service
    readonly memberships: typeof MembershipRepo.Service
    readonly audit: typeof AuditEventRepo.Service
  },
  identity: NewEnterpriseIdentity,
  at: Date
) =>
  Effect.gen(function* () {
    const id = yield* repos.users.insertEnterprise({
      namespace: identity.namespace,
      externalSubject: identity.subject,
      displayName: identity.displayName,
      at
    })
    if (identity.bootstrap) {
      yield* repos.users.setStatus(id, "enabled", at)
      yield* repos.memberships.replace(id, "direct", [ADMINISTRATORS_GROUP_ID], at)
    }
    const detail = userCreatedFields(id, identity)
    yield* repos.audit.insert({
      at,
      actorId: undefined,
      action: "identity.user_created",
      targetKind: "user",
      targetId: id,
      detail: {
        namespace: detail.namespace,
        external_subject: detail.external_subject,
        status: detail.status,
        bootstrap: identity.bootstrap
      },
      requestId: undefined
    })
    return id
  })

/** The fields of the `identity.user_created` security log line. */
export const userCreatedFields = (id: string, identity: NewEnterpriseIdentity) => ({
  target_kind: "user",
  target_id: id,
  namespace: identity.namespace,
  external_subject: identity.subject,
  status: identity.bootstrap ? "enabled" : "pending"
})
