import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const ClientGrantRow = Schema.Struct({
  user_id: Schema.String,
  client_id: Schema.String,
  scope: Schema.String,
  created_at: StoredTimestamp,
  updated_at: StoredTimestamp
})
export type ClientGrantRow = typeof ClientGrantRow.Type

const Key = Schema.Struct({ userId: Schema.String, clientId: Schema.String })

/** Persistence of `client_grants`: the clients a person allowed to act for them (consent). */
export class ClientGrantRepo extends Effect.Service<ClientGrantRepo>()("gateway/ClientGrantRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const byKey = SqlSchema.findOne({
      Request: Key,
      Result: ClientGrantRow,
      execute: ({ userId, clientId }) =>
        sql`SELECT * FROM client_grants WHERE user_id = ${userId} AND client_id = ${clientId}`
    })
    const byUser = SqlSchema.findAll({
      Request: Schema.String,
      Result: ClientGrantRow,
      execute: (userId) => sql`SELECT * FROM client_grants WHERE user_id = ${userId} ORDER BY client_id`
    })

    const find = Effect.fn("ClientGrantRepo.find")((userId: string, clientId: string) =>
      byKey({ userId, clientId }).pipe(Effect.orDie)
    )
    const listForUser = Effect.fn("ClientGrantRepo.listForUser")((userId: string) => byUser(userId).pipe(Effect.orDie))

    /** Records consent to `scope` (space-separated), replacing an earlier grant of the same client. */
    const upsert = Effect.fn("ClientGrantRepo.upsert")(function* (
      userId: string,
      clientId: string,
      scope: string,
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      yield* sql`INSERT INTO client_grants ${sql.insert({
        user_id: userId,
        client_id: clientId,
        scope,
        created_at: stamp,
        updated_at: stamp
      })} ON CONFLICT (user_id, client_id) DO UPDATE SET scope = ${scope}, updated_at = ${stamp}`.pipe(Effect.orDie)
    })

    /** Deletes the grant; true when there was one. */
    const remove = Effect.fn("ClientGrantRepo.remove")(function* (userId: string, clientId: string) {
      const rows = yield* sql`DELETE FROM client_grants WHERE user_id = ${userId} AND client_id = ${clientId}
        RETURNING client_id`.pipe(Effect.orDie)
      return rows.length > 0
    })

    return { find, listForUser, upsert, remove } as const
  })
}) {}
