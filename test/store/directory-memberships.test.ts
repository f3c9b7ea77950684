/**
 * docs/directory.md, "Storage": directory memberships are one row per person (a sorted JSON array of
 * group ids) in `directory_memberships`, read beside `memberships` as rows of source `directory`, on
 * both stores. The migration moves directory rows an earlier build kept in `memberships`.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { organizationGroupRow } from "../../src/store/groups.js"
import { COUNT_SLICE, MembershipRepo } from "../../src/store/memberships.js"
import moveDirectoryMemberships from "../../src/store/migrations/0013_directory_memberships.js"
import { storeKinds, storeLayer, withStorage } from "../support/databases.js"

const STAMP = "2026-11-26T00:00:00.000Z"

const enterprisePerson = (id: string) => ({
  id,
  kind: "enterprise",
  username: null,
  display_name: id,
  status: "enabled",
  namespace: "corp",
  external_subject: id,
  created_at: STAMP,
  updated_at: STAMP
})

/** The membership repository on a fresh store of `kind`, and a client for arranging rows. */
const opened = (kind: (typeof storeKinds)[number]) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      MembershipRepo.Default.pipe(Layer.provideMerge(storeLayer(yield* withStorage(kind))))
    )
    return {
      sql: yield* Effect.provide(SqlClient.SqlClient, context),
      repo: yield* Effect.provide(MembershipRepo, context)
    }
  })

describe.each(storeKinds)("directory memberships on %s", (kind) => {
  it.scoped(
    "the migration moves directory rows out of memberships into one sorted row per person; readers see them with their source, and never a directory row left in memberships; deleting the person takes the row",
    () =>
      Effect.gen(function* () {
        const { sql, repo } = yield* opened(kind)
        yield* sql`INSERT INTO users ${sql.insert({
          id: "u1",
          kind: "enterprise",
          username: null,
          display_name: "Alice",
          status: "enabled",
          namespace: "corp",
          external_subject: "alice",
          created_at: STAMP,
          updated_at: STAMP
        })}`
        for (const [id, name] of [
          ["g-b", "B"],
          ["g-a", "A"],
          ["g-c", "C"],
          ["g-d", "D"]
        ] as const) {
          yield* sql`INSERT INTO groups ${sql.insert(organizationGroupRow(id, "corp", "group", { externalId: id, name }, STAMP))}`
        }
        // As an earlier build wrote them: one row per membership, directory and claims side by side.
        yield* sql`DROP TABLE directory_memberships`
        yield* sql`INSERT INTO memberships ${sql.insert([
          { user_id: "u1", group_id: "g-b", source: "directory", created_at: STAMP },
          { user_id: "u1", group_id: "g-a", source: "directory", created_at: STAMP },
          { user_id: "u1", group_id: "g-c", source: "claims", created_at: STAMP }
        ])}`
        yield* Effect.provideService(moveDirectoryMemberships, SqlClient.SqlClient, sql)

        const stored = yield* sql<{
          user_id: string
          group_ids: string
        }>`SELECT user_id, group_ids FROM directory_memberships`
        expect(stored.map((row) => [row.user_id, JSON.parse(row.group_ids)])).toEqual([["u1", ["g-a", "g-b"]]])
        const left = yield* sql<{
          group_id: string
          source: string
        }>`SELECT group_id, source FROM memberships WHERE user_id = 'u1'`
        expect(left).toEqual([{ group_id: "g-c", source: "claims" }])

        // A directory row an older release writes into `memberships` after a downgrade is never read.
        yield* sql`INSERT INTO memberships ${sql.insert({ user_id: "u1", group_id: "g-d", source: "directory", created_at: STAMP })}`
        const seen = (rows: ReadonlyArray<{ user_id: string; group_id: string; source: string }>) =>
          rows.map((row) => `${row.user_id}:${row.group_id}:${row.source}`)
        expect(seen(yield* repo.forUser("u1"))).toEqual(["u1:g-a:directory", "u1:g-b:directory", "u1:g-c:claims"])
        expect(seen(yield* repo.forUsers(["u1", "nobody"]))).toEqual([
          "u1:g-a:directory",
          "u1:g-b:directory",
          "u1:g-c:claims"
        ])
        expect(Object.fromEntries(yield* repo.countByGroup)).toEqual({ "g-a": 1, "g-b": 1, "g-c": 1 })

        if (kind === "postgres") {
          // Lists of ids are stored as they are: compressing them costs more than it saves.
          const [column] = yield* sql<{ attstorage: string }>`SELECT attstorage FROM pg_attribute
            WHERE attrelid = 'directory_memberships'::regclass AND attname = 'group_ids'`
          expect(column?.attstorage).toBe("e")
        }

        yield* sql`DELETE FROM users WHERE id = 'u1'`
        expect(yield* sql`SELECT * FROM directory_memberships`).toEqual([])
      })
  )

  it.scoped(
    "member counts per group span every slice of people the count is read in, and are counted again once a snapshot is applied",
    () =>
      Effect.gen(function* () {
        const { sql, repo } = yield* opened(kind)
        // More people than two slices hold, in two groups of alternating people, one person in both.
        const people = Array.from({ length: COUNT_SLICE * 2 + 17 }, (_, at) => `u${String(at).padStart(5, "0")}`)
        const lists = new Map(people.map((id, at) => [id, at === 0 ? ["g-a", "g-b"] : [at % 2 === 0 ? "g-a" : "g-b"]]))
        yield* sql`INSERT INTO users ${sql.insert(people.map(enterprisePerson))}`
        yield* sql`INSERT INTO directory_memberships ${sql.insert(
          [...lists].map(([user_id, ids]) => ({ user_id, group_ids: JSON.stringify(ids), updated_at: STAMP }))
        )}`
        yield* sql`INSERT INTO directory_versions ${sql.insert({ provider: "corp", version: 1, applied_at: STAMP, summary: "{}" })}`
        const truth = () => {
          const counts: Record<string, number> = {}
          for (const ids of lists.values()) for (const id of ids) counts[id] = (counts[id] ?? 0) + 1
          return counts
        }
        const before = truth()
        expect(before).toEqual({ "g-a": COUNT_SLICE + 9, "g-b": COUNT_SLICE + 9 })
        expect(Object.fromEntries(yield* repo.countByGroup)).toEqual(before)

        // A snapshot applied since: the first person leaves both groups for g-c.
        lists.set("u00000", ["g-c"])
        yield* sql`UPDATE directory_memberships SET group_ids = ${JSON.stringify(["g-c"])} WHERE user_id = 'u00000'`
        yield* sql`UPDATE directory_versions SET version = 2`
        expect(Object.fromEntries(yield* repo.countByGroup)).toEqual(truth())
      })
  )

  if (kind === "sqlite") {
    it.scoped(
      "on SQLite, snapshots applied between the slices the count is read in never leave counts that mix before and after",
      () =>
        Effect.gen(function* () {
          const { sql, repo } = yield* opened(kind)
          const people = Array.from({ length: COUNT_SLICE * 3 }, (_, at) => `u${String(at).padStart(5, "0")}`)
          yield* sql`INSERT INTO users ${sql.insert(people.map(enterprisePerson))}`
          yield* sql`INSERT INTO directory_memberships ${sql.insert(
            people.map((user_id) => ({ user_id, group_ids: JSON.stringify(["g-a"]), updated_at: STAMP }))
          )}`
          yield* sql`INSERT INTO directory_versions ${sql.insert({ provider: "corp", version: 1, applied_at: STAMP, summary: "{}" })}`
          // Every turn of the event loop, a snapshot moves everyone to the other group, as one transaction.
          let applied = 0
          const apply = sql.withTransaction(
            Effect.gen(function* () {
              const group = applied % 2 === 0 ? "g-b" : "g-a"
              yield* sql`UPDATE directory_memberships SET group_ids = ${JSON.stringify([group])}`
              yield* sql`UPDATE directory_versions SET version = version + 1`
              applied += 1
            })
          )
          const snapshots = yield* Effect.fork(
            Effect.forever(
              Effect.zipRight(
                Effect.promise(() => new Promise((resume) => setImmediate(resume))),
                apply
              )
            )
          )
          const seen = Object.fromEntries(yield* repo.countByGroup)
          yield* Fiber.interrupt(snapshots)
          // Snapshots did land while counting, and what was counted is one of the two states, whole.
          expect(applied).toBeGreaterThan(1)
          expect([{ "g-a": people.length }, { "g-b": people.length }]).toContainEqual(seen)
          const now = applied % 2 === 0 ? "g-a" : "g-b"
          expect(Object.fromEntries(yield* repo.countByGroup)).toEqual({ [now]: people.length })
        })
    )
  }

  it.scoped(
    "counts each person's groups of every source together, a directory list by its length (a page of people)",
    () =>
      Effect.gen(function* () {
        const { sql, repo } = yield* opened(kind)
        yield* sql`INSERT INTO users ${sql.insert(["u1", "u2", "u3"].map(enterprisePerson))}`
        for (const id of ["g-a", "g-b", "g-c"]) {
          yield* sql`INSERT INTO groups ${sql.insert(organizationGroupRow(id, "corp", "group", { externalId: id, name: id }, STAMP))}`
        }
        yield* sql`INSERT INTO directory_memberships ${sql.insert([
          { user_id: "u1", group_ids: JSON.stringify(["g-a", "g-b", "g-c"]), updated_at: STAMP },
          { user_id: "u2", group_ids: JSON.stringify([]), updated_at: STAMP }
        ])}`
        yield* sql`INSERT INTO memberships ${sql.insert([
          { user_id: "u1", group_id: "g-a", source: "claims", created_at: STAMP },
          { user_id: "u3", group_id: "g-b", source: "direct", created_at: STAMP },
          { user_id: "u3", group_id: "g-c", source: "claims", created_at: STAMP },
          // A directory row an earlier build left in `memberships` never counts (as every reader).
          { user_id: "u3", group_id: "g-a", source: "directory", created_at: STAMP }
        ])}`
        const counts = yield* repo.countsForUsers(["u1", "u2", "u3", "nobody"])
        expect(Object.fromEntries(counts)).toEqual({ u1: 4, u2: 0, u3: 2, nobody: 0 })
        for (const id of ["u1", "u2", "u3"]) expect(counts.get(id)).toBe((yield* repo.forUser(id)).length)
        expect((yield* repo.countsForUsers([])).size).toBe(0)
      })
  )
})
