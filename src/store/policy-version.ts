import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

const VersionRows = Schema.Array(Schema.Struct({ version: Schema.Number }))

/**
 * The one-row counter every policy write bumps (migration 0009). Bumping it first in a transaction
 * takes its row lock, which serializes policy writes on PostgreSQL (SQLite serializes writers anyway);
 * a running gateway reads it to notice writes made by another process.
 */
export class PolicyVersionRepo extends Effect.Service<PolicyVersionRepo>()("gateway/PolicyVersionRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const decode = Schema.decodeUnknown(VersionRows)

    const bump = sql`UPDATE policy_version SET version = version + 1 WHERE id = 1 RETURNING version`.pipe(
      Effect.flatMap(decode),
      Effect.map((rows) => rows[0]?.version ?? 0),
      Effect.orDie,
      Effect.withSpan("PolicyVersionRepo.bump")
    )
    const current = sql`SELECT version FROM policy_version WHERE id = 1`.pipe(
      Effect.flatMap(decode),
      Effect.map((rows) => rows[0]?.version ?? 0),
      Effect.orDie,
      Effect.withSpan("PolicyVersionRepo.current")
    )
    return { bump, current } as const
  })
}) {}
