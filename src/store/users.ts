import { randomUUID } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { SessionCache } from "./session-cache.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

export const UserKind = Schema.Literal("builtin_admin", "local", "enterprise")
export type UserKind = typeof UserKind.Type
export const UserStatus = Schema.Literal("pending", "enabled", "disabled")
export type UserStatus = typeof UserStatus.Type

export const UserRow = Schema.Struct({
  id: UserId,
  kind: UserKind,
  username: Schema.NullOr(Schema.String),
  display_name: Schema.String,
  status: UserStatus,
  created_at: StoredTimestamp,
  updated_at: StoredTimestamp
})
export type UserRow = typeof UserRow.Type

export interface NewLocalUser {
  readonly kind: "builtin_admin" | "local"
  readonly username: string
  readonly displayName: string
  readonly at: Date
}

export const newUserId = (): UserId => UserId.make(randomUUID())

/** Persistence of `users`. A status change invalidates the session cache so it applies on the next request. */
export class UserRepo extends Effect.Service<UserRepo>()("gateway/UserRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* SessionCache

    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: UserRow,
      execute: (id) => sql`SELECT * FROM users WHERE id = ${id}`
    })
    const byUsername = SqlSchema.findOne({
      Request: Schema.String,
      Result: UserRow,
      execute: (username) => sql`SELECT * FROM users WHERE kind <> 'enterprise' AND username = ${username}`
    })
    const builtinAdmin = SqlSchema.findOne({
      Request: Schema.Void,
      Result: UserRow,
      execute: () => sql`SELECT * FROM users WHERE kind = 'builtin_admin'`
    })

    const findById = Effect.fn("UserRepo.findById")((id: string) => byId(id).pipe(Effect.orDie))
    const findLocalByUsername = Effect.fn("UserRepo.findLocalByUsername")((username: string) =>
      byUsername(username).pipe(Effect.orDie)
    )
    const findBuiltinAdmin = builtinAdmin(undefined).pipe(Effect.orDie, Effect.withSpan("UserRepo.findBuiltinAdmin"))

    const insertLocal = Effect.fn("UserRepo.insertLocal")(function* (user: NewLocalUser) {
      const id = newUserId()
      const at = toStoredTimestamp(user.at)
      yield* sql`INSERT INTO users ${sql.insert({
        id,
        kind: user.kind,
        username: user.username,
        display_name: user.displayName,
        status: "enabled",
        created_at: at,
        updated_at: at
      })}`.pipe(Effect.orDie)
      return id
    })

    const setStatus = Effect.fn("UserRepo.setStatus")(function* (id: string, status: UserStatus, at: Date) {
      yield* sql`UPDATE users SET status = ${status}, updated_at = ${toStoredTimestamp(at)} WHERE id = ${id}`.pipe(
        Effect.orDie
      )
      yield* cache.forgetUser(id)
    })

    return { findById, findLocalByUsername, findBuiltinAdmin, insertLocal, setStatus } as const
  }),
  dependencies: [SessionCache.Default]
}) {}
