import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { refuse } from "./refusal.js"
import { StoredPermissions } from "./stored-permissions.js"

const Row = Schema.Struct({ user_id: Schema.String, permissions: Schema.NullOr(StoredPermissions) })

/**
 * The local administrators that remain: enabled local accounts (the built-in administrator and other
 * non-enterprise users) with a direct membership in an enabled permission group holding the `admin`
 * role. Read inside the policy transaction, after the change was applied.
 */
const remainingLocalAdministrators = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT m.user_id, g.permissions FROM memberships m
    JOIN users u ON u.id = m.user_id JOIN groups g ON g.id = m.group_id
    WHERE u.kind <> 'enterprise' AND u.status = 'enabled' AND u.directory_active = 1
      AND m.source = 'direct' AND g.kind = 'permission' AND g.enabled = 1`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Row))),
    Effect.orDie
  )
  return new Set(rows.filter((row) => row.permissions?.roles.includes("admin") === true).map((row) => row.user_id))
})

/**
 * Spec Errors, 409 `last_administrator`; Management API 2, "a local administrator must be retained
 * independently of enterprise directory access". Every write that can demote anyone — disabling a
 * user, removing a membership, disabling a group or removing its `admin` role — runs inside this, in
 * its transaction: when the local administrators before the change exist and none remain after it,
 * the change is refused and rolled back. Writes are serialized by the `policy_version` row lock, so
 * two concurrent demotions cannot both pass.
 */
export const keepingLocalAdministrator = <A, E, R>(change: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const before = yield* remainingLocalAdministrators
    const result = yield* change
    if (before.size === 0) return result
    const after = yield* remainingLocalAdministrators
    if (after.size > 0) return result
    return yield* refuse(
      "last_administrator",
      "This change would leave no enabled local administrator; keep at least one (the built-in administrator can be recovered with `gateway init-admin --reset`)."
    )
  })
