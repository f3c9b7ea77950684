import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { PolicyVersionRepo } from "../store/policy-version.js"
import { AccessState, type PolicyChange } from "./access-state.js"

/**
 * Every write of the stored policy (groups, memberships, people, local accounts) commits here: `work`
 * runs in one transaction after the policy version is bumped, then the in-memory policy is told what
 * changed (`changeOf`) with the version committed. Once committed, it is told even if the request is
 * interrupted right then: a change it never heard of would otherwise wait for the poll.
 */
export const commitPolicyChange = <A, E>(
  work: Effect.Effect<A, E, SqlClient.SqlClient>,
  changeOf: (value: A) => PolicyChange
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const versions = yield* PolicyVersionRepo
    const state = yield* AccessState
    const { value } = yield* Effect.uninterruptibleMask((restore) =>
      Effect.tap(
        restore(
          sql
            .withTransaction(
              Effect.gen(function* () {
                const version = yield* versions.bump
                return { value: yield* work, version }
              })
            )
            .pipe(Effect.catchTag("SqlError", Effect.die), Effect.provideService(SqlClient.SqlClient, sql))
        ),
        ({ value, version }) => state.changed({ ...changeOf(value), version })
      )
    )
    return value
  })
