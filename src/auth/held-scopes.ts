import { Effect } from "effect"
import { AccessState } from "../policy/access-state.js"
import type { Grant } from "../policy/grant.js"
import { OFFLINE_ACCESS } from "./scopes.js"

/**
 * The scopes a user holds now (docs/access-policy.md, "Rules"): users hold no direct scopes; they inherit
 * them from their active permission groups — the groups' `scopes` and the administrative scopes of
 * their roles (src/policy/roles.ts). A user who is not active holds nothing.
 */
export const heldScopes = (grant: Grant | undefined): ReadonlySet<string> =>
  grant?.active === true ? grant.scopes : new Set()

/**
 * `requested` narrowed to what user `userId` holds now, in request order. `offline_access` stays: it
 * asks for a refresh token inside the 8-hour session and grants no access of its own.
 */
export const grantableScope = (userId: string, requested: ReadonlyArray<string>) =>
  Effect.flatMap(AccessState, (state) => state.grantOfUser(userId)).pipe(
    Effect.map((grant) => {
      const held = heldScopes(grant)
      return requested.filter((scope) => scope === OFFLINE_ACCESS || held.has(scope))
    })
  )
