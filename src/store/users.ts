import { randomUUID } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { groupNameKey } from "../policy/group-name.js"
import { lookAlikeKey } from "../policy/look-alike.js"
import { StoredBoolean, StoredRevision, toStoredBoolean } from "./columns.js"
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
  revision: StoredRevision,
  /** The directory's word on this person (pushed snapshots); true until a snapshot says otherwise. */
  directory_active: StoredBoolean,
  /** When sign-in or a directory snapshot last confirmed the upstream-owned memberships. */
  membership_verified_at: Schema.NullOr(StoredTimestamp),
  /** Enterprise identities: the provider connection's namespace and the subject it asserted. */
  namespace: Schema.NullOr(Schema.String),
  external_subject: Schema.NullOr(Schema.String),
  created_at: StoredTimestamp,
  updated_at: StoredTimestamp
})
export type UserRow = typeof UserRow.Type

export interface NewLocalUser {
  readonly kind: "builtin_admin" | "local"
  readonly username: string
  readonly displayName: string
  readonly at: Date
  /** Default `enabled`; an account given to a person waits for its enrolment (`pending`). */
  readonly status?: UserStatus
}

export interface NewEnterpriseUser {
  readonly namespace: string
  readonly externalSubject: string
  readonly displayName: string
  readonly at: Date
}

/** The outcome of a write conditioned on the row's revision (`If-Match`). */
export type ConditionalWrite =
  | { readonly _tag: "Written"; readonly revision: number }
  | { readonly _tag: "Stale"; readonly revision: number }
  | { readonly _tag: "Missing" }

export const newUserId = (): UserId => UserId.make(randomUUID())

const RevisionRow = Schema.Array(Schema.Struct({ revision: StoredRevision }))

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
      // Compared by key (NFC, case-folded: migration 0021), so `Alice` signs in as `alice`.
      execute: (username) =>
        sql`SELECT * FROM users WHERE kind <> 'enterprise' AND username_key = ${groupNameKey(username)}`
    })
    const byExternal = SqlSchema.findOne({
      Request: Schema.Struct({ namespace: Schema.String, subject: Schema.String }),
      Result: UserRow,
      execute: ({ namespace, subject }) =>
        sql`SELECT * FROM users WHERE kind = 'enterprise' AND namespace = ${namespace}
          AND external_subject = ${subject}`
    })
    const builtinAdmin = SqlSchema.findOne({
      Request: Schema.Void,
      Result: UserRow,
      execute: () => sql`SELECT * FROM users WHERE kind = 'builtin_admin'`
    })
    const pageAfter = SqlSchema.findAll({
      Request: Schema.Struct({ after: Schema.String, limit: Schema.Number }),
      Result: UserRow,
      execute: ({ after, limit }) => sql`SELECT * FROM users WHERE id > ${after} ORDER BY id LIMIT ${limit}`
    })

    const windowAfter = SqlSchema.findAll({
      Request: Schema.Struct({
        after: Schema.String,
        window: Schema.Number,
        pattern: Schema.String,
        limit: Schema.Number
      }),
      Result: UserRow,
      execute: ({ after, window, pattern, limit }) =>
        sql`SELECT * FROM (SELECT * FROM users WHERE id > ${after} ORDER BY id LIMIT ${window}) scanned
          WHERE lower(display_name) LIKE ${pattern} ESCAPE '!' OR lower(coalesce(username, '')) LIKE ${pattern} ESCAPE '!'
          ORDER BY id LIMIT ${limit}`
    })
    const windowEnd = SqlSchema.findAll({
      Request: Schema.Struct({ after: Schema.String, window: Schema.Number }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ after, window }) =>
        sql`SELECT id FROM users WHERE id > ${after} ORDER BY id LIMIT 1 OFFSET ${window - 1}`
    })
    const localPageAfter = SqlSchema.findAll({
      Request: Schema.Struct({ after: Schema.String, limit: Schema.Number }),
      Result: UserRow,
      execute: ({ after, limit }) =>
        sql`SELECT * FROM users WHERE kind = 'local' AND id > ${after} ORDER BY id LIMIT ${limit}`
    })

    const lookingLike = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ username: Schema.String }),
      execute: (lookKey) => sql`SELECT username FROM users WHERE kind <> 'enterprise' AND look_key = ${lookKey} LIMIT 1`
    })

    const findById = Effect.fn("UserRepo.findById")((id: string) => byId(id).pipe(Effect.orDie))
    const findLocalByUsername = Effect.fn("UserRepo.findLocalByUsername")((username: string) =>
      byUsername(username).pipe(Effect.orDie)
    )
    const findEnterprise = Effect.fn("UserRepo.findEnterprise")((namespace: string, subject: string) =>
      byExternal({ namespace, subject }).pipe(Effect.orDie)
    )
    const findBuiltinAdmin = builtinAdmin(undefined).pipe(Effect.orDie, Effect.withSpan("UserRepo.findBuiltinAdmin"))
    /** Up to `limit` users whose id sorts after `after` (`""`: from the start), by id. */
    const page = Effect.fn("UserRepo.page")((after: string, limit: number) =>
      pageAfter({ after, limit }).pipe(Effect.orDie)
    )

    /**
     * Up to `limit` users after `after` (by id) whose display name or username contains `text`
     * (case-insensitive for ASCII letters), looking at no more than `window` users: a search over
     * every user would grow with the table, and no index serves a substring. `next` is where the next
     * search continues (the last match of a full page, or the end of the window), undefined at the end.
     */
    const searchWindow = Effect.fn("UserRepo.searchWindow")(function* (
      after: string,
      text: string,
      window: number,
      limit: number
    ) {
      const pattern = `%${text.toLowerCase().replace(/[!%_]/g, (char) => `!${char}`)}%`
      const found = yield* windowAfter({ after, window, pattern, limit }).pipe(Effect.orDie)
      if (found.length === limit) return { users: found, next: found.at(-1)!.id as string | undefined }
      const end = yield* windowEnd({ after, window }).pipe(Effect.orDie)
      return { users: found, next: end[0]?.id }
    })

    /** Up to `limit` accounts of kind `local` whose id sorts after `after`, by id (index `users_kind_id`). */
    const pageLocal = Effect.fn("UserRepo.pageLocal")((after: string, limit: number) =>
      localPageAfter({ after, limit }).pipe(Effect.orDie)
    )

    const localRow = (id: UserId, user: NewLocalUser) => {
      const at = toStoredTimestamp(user.at)
      return {
        id,
        kind: user.kind,
        username: user.username,
        username_key: groupNameKey(user.username),
        look_key: lookAlikeKey(user.username),
        display_name: user.displayName,
        status: user.status ?? "enabled",
        created_at: at,
        updated_at: at
      }
    }

    const insertLocal = Effect.fn("UserRepo.insertLocal")(function* (user: NewLocalUser) {
      const id = newUserId()
      yield* sql`INSERT INTO users ${sql.insert(localRow(id, user))}`.pipe(Effect.orDie)
      return id
    })

    /**
     * A new local account, unless one whose name reads alike exists: the unique index on `username_key`
     * decides, so two racing creates cannot both win. Undefined when the name is taken.
     */
    const insertLocalIfFree = Effect.fn("UserRepo.insertLocalIfFree")(function* (user: NewLocalUser) {
      const id = newUserId()
      const rows = yield* sql`INSERT INTO users ${sql.insert(localRow(id, user))}
        ON CONFLICT (username_key) WHERE kind <> 'enterprise' DO NOTHING RETURNING id`.pipe(Effect.orDie)
      return rows.length === 1 ? id : undefined
    })

    /**
     * The local account (or the built-in administrator) whose user name looks like `username` (equal
     * `lookAlikeKey`: UTS #39 skeletons); one lookup in the `look_key` index.
     */
    const findLocalLookingLike = Effect.fn("UserRepo.findLocalLookingLike")(function* (username: string) {
      const found = yield* lookingLike(lookAlikeKey(username)).pipe(Effect.orDie)
      return Option.getOrUndefined(found)?.username
    })

    /** A new enterprise identity, pending until an administrator enables it. */
    const insertEnterprise = Effect.fn("UserRepo.insertEnterprise")(function* (user: NewEnterpriseUser) {
      const id = newUserId()
      const at = toStoredTimestamp(user.at)
      yield* sql`INSERT INTO users ${sql.insert({
        id,
        kind: "enterprise",
        username: null,
        display_name: user.displayName,
        status: "pending",
        namespace: user.namespace,
        external_subject: user.externalSubject,
        created_at: at,
        updated_at: at
      })}`.pipe(Effect.orDie)
      return id
    })

    const setStatus = Effect.fn("UserRepo.setStatus")(function* (id: string, status: UserStatus, at: Date) {
      yield* sql`UPDATE users SET status = ${status}, revision = revision + 1, updated_at = ${toStoredTimestamp(at)}
        WHERE id = ${id}`.pipe(Effect.orDie)
      yield* cache.forgetUser(id)
    })

    /**
     * Bumps the revision of user `id` if it is still `expected` (and sets `status` when given): one
     * conditional UPDATE, so two writers holding the same revision cannot both succeed.
     */
    const updateIfRevision = Effect.fn("UserRepo.updateIfRevision")(function* (
      id: string,
      expected: number,
      change: { readonly status?: UserStatus },
      at: Date
    ) {
      const stamp = toStoredTimestamp(at)
      const status = change.status === undefined ? sql`status` : sql`${change.status}`
      const rows = yield* sql`UPDATE users SET status = ${status}, revision = revision + 1, updated_at = ${stamp}
        WHERE id = ${id} AND revision = ${expected} RETURNING revision`.pipe(
        Effect.flatMap(Schema.decodeUnknown(RevisionRow)),
        Effect.orDie
      )
      yield* cache.forgetUser(id)
      const written = rows[0]
      if (written !== undefined) return { _tag: "Written", revision: written.revision } as ConditionalWrite
      const current = yield* findById(id)
      return current._tag === "None"
        ? ({ _tag: "Missing" } as ConditionalWrite)
        : ({ _tag: "Stale", revision: current.value.revision } as ConditionalWrite)
    })

    /** The ids of the enterprise identities of a namespace (a replaced connection's people). */
    const idsInNamespace = Effect.fn("UserRepo.idsInNamespace")(function* (namespace: string) {
      const rows = yield* sql`SELECT id FROM users WHERE kind = 'enterprise' AND namespace = ${namespace}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String })))),
        Effect.orDie
      )
      return rows.map((row) => row.id)
    })

    /** The name an upstream reports for an enterprise identity, refreshed at each sign-in. */
    const setDisplayName = Effect.fn("UserRepo.setDisplayName")(function* (id: string, name: string, at: Date) {
      yield* sql`UPDATE users SET display_name = ${name}, updated_at = ${toStoredTimestamp(at)}
        WHERE id = ${id} AND display_name <> ${name}`.pipe(Effect.orDie)
    })

    /** Records the directory's active state and when the upstream memberships were last confirmed. */
    const setUpstreamState = Effect.fn("UserRepo.setUpstreamState")(function* (
      id: string,
      state: { readonly directoryActive?: boolean; readonly verifiedAt?: Date | null }
    ) {
      const active =
        state.directoryActive === undefined ? sql`directory_active` : sql`${toStoredBoolean(state.directoryActive)}`
      const verified =
        state.verifiedAt === undefined
          ? sql`membership_verified_at`
          : sql`${state.verifiedAt === null ? null : toStoredTimestamp(state.verifiedAt)}`
      yield* sql`UPDATE users SET directory_active = ${active}, membership_verified_at = ${verified}
        WHERE id = ${id}`.pipe(Effect.orDie)
      yield* cache.forgetUser(id)
    })

    return {
      findById,
      findLocalByUsername,
      findEnterprise,
      findBuiltinAdmin,
      page,
      searchWindow,
      pageLocal,
      insertLocal,
      insertLocalIfFree,
      findLocalLookingLike,
      insertEnterprise,
      setStatus,
      updateIfRevision,
      setDisplayName,
      idsInNamespace,
      setUpstreamState
    } as const
  }),
  dependencies: [SessionCache.Default]
}) {}
