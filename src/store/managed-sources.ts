import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { SourceKind } from "../sources/schema.js"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/** One managed tool source as stored (migration 0020); `definition` is JSON with its secrets sealed. */
export const ManagedSourceRow = Schema.Struct({
  id: Schema.String,
  kind: SourceKind,
  revision: Schema.Int.pipe(Schema.positive()),
  definition: Schema.String,
  updated_at: StoredTimestamp,
  updated_by: Schema.NullOr(Schema.String)
})
export type ManagedSourceRow = typeof ManagedSourceRow.Type

const Rows = Schema.Array(ManagedSourceRow)
const Revisions = Schema.Array(Schema.Struct({ revision: Schema.Int }))
const Ids = Schema.Array(Schema.Struct({ id: Schema.String }))
const StateRows = Schema.Array(
  Schema.Struct({ initialized_at: Schema.NullOr(StoredTimestamp), initialized_by: Schema.NullOr(Schema.String) })
)

/** When managed storage was initialized, and by whom (none: the command line or start-up). */
export interface Initialized {
  readonly at: Date
  readonly by: string | null
}

export interface NewSource {
  readonly id: string
  readonly kind: SourceKind
  readonly definition: string
  readonly at: Date
  readonly by: string | null
}

/**
 * Persistence of `managed_sources` and the initialization marker. Every write is one conditional
 * statement — an insert that does nothing when the id exists (in any kind), an update or delete only at
 * the revision the writer read — so of two writers holding one revision exactly one succeeds, on both
 * stores. Callers run a change's writes in one transaction (src/sources/commit.ts).
 */
export class ManagedSourceRepo extends Effect.Service<ManagedSourceRepo>()("gateway/ManagedSourceRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const initialized = Effect.fn("ManagedSourceRepo.initialized")(function* () {
      const rows = yield* sql`SELECT initialized_at, initialized_by FROM managed_sources_state WHERE id = 1`.pipe(
        Effect.flatMap(Schema.decodeUnknown(StateRows)),
        Effect.orDie
      )
      const row = rows[0]
      return row?.initialized_at == null
        ? Option.none<Initialized>()
        : Option.some<Initialized>({ at: row.initialized_at, by: row.initialized_by })
    })

    /** Sets the marker; false when it was set already (another writer initialized first). */
    const markInitialized = Effect.fn("ManagedSourceRepo.markInitialized")(function* (at: Date, by: string | null) {
      const rows = yield* sql`UPDATE managed_sources_state SET initialized_at = ${toStoredTimestamp(at)},
        initialized_by = ${by} WHERE id = 1 AND initialized_at IS NULL RETURNING initialized_by`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Unknown))),
        Effect.orDie
      )
      return rows.length === 1
    })

    const list = Effect.fn("ManagedSourceRepo.list")(function* (kind?: SourceKind) {
      const query =
        kind === undefined
          ? sql`SELECT * FROM managed_sources ORDER BY id`
          : sql`SELECT * FROM managed_sources WHERE kind = ${kind} ORDER BY id`
      return yield* query.pipe(Effect.flatMap(Schema.decodeUnknown(Rows)), Effect.orDie)
    })

    const find = Effect.fn("ManagedSourceRepo.find")(function* (id: string) {
      const rows = yield* sql`SELECT * FROM managed_sources WHERE id = ${id}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Rows)),
        Effect.orDie
      )
      return Option.fromNullable(rows[0])
    })

    /** False when the id is taken (by a record of any kind). */
    const insert = Effect.fn("ManagedSourceRepo.insert")(function* (source: NewSource) {
      const rows = yield* sql`INSERT INTO managed_sources ${sql.insert({
        id: source.id,
        kind: source.kind,
        revision: 1,
        definition: source.definition,
        updated_at: toStoredTimestamp(source.at),
        updated_by: source.by
      })} ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(Effect.flatMap(Schema.decodeUnknown(Ids)), Effect.orDie)
      return rows.length === 1
    })

    /** The new revision, or undefined when the record is gone or no longer at `expected`. */
    const replaceIfRevision = Effect.fn("ManagedSourceRepo.replaceIfRevision")(function* (
      id: string,
      expected: number,
      definition: string,
      at: Date,
      by: string | null
    ) {
      const rows = yield* sql`UPDATE managed_sources SET revision = revision + 1, definition = ${definition},
        updated_at = ${toStoredTimestamp(at)}, updated_by = ${by}
        WHERE id = ${id} AND revision = ${expected} RETURNING revision`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Revisions)),
        Effect.orDie
      )
      return rows[0]?.revision
    })

    /** True when the record was at `expected` and is gone now. */
    const deleteIfRevision = Effect.fn("ManagedSourceRepo.deleteIfRevision")(function* (id: string, expected: number) {
      const rows =
        yield* sql`DELETE FROM managed_sources WHERE id = ${id} AND revision = ${expected} RETURNING id`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Ids)),
          Effect.orDie
        )
      return rows.length === 1
    })

    return { initialized, markInitialized, list, find, insert, replaceIfRevision, deleteIfRevision } as const
  })
}) {}
