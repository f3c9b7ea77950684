/**
 * The audit trail's listing (migration 0022) on SQLite and PostgreSQL: each filter is served by its
 * own index in the listing's order — no sort of every matching event — and keyset pages of many events
 * with equal times neither skip nor repeat one.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AuditEventRepo, type AuditPageQuery, auditPageStatement } from "../../src/store/audit-events.js"
import { storeKinds, testStoreLayer } from "../support/databases.js"

const layerFor = (kind: (typeof storeKinds)[number]) =>
  AuditEventRepo.Default.pipe(Layer.provideMerge(testStoreLayer(kind)))

const before = { at: new Date("2026-01-01T00:00:00.000Z"), id: "z" }

/** The plan of the listing's own query, as text: SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN without sequential scans. */
const planOf = (query: AuditPageQuery) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [text, params] = auditPageStatement(sql, query).compile()
    return yield* sql.onDialectOrElse({
      sqlite: () =>
        Effect.map(sql.unsafe<Record<string, unknown>>(`EXPLAIN QUERY PLAN ${text}`, params), (rows) =>
          rows.map((row) => String(row["detail"])).join("\n")
        ),
      orElse: () =>
        sql.withTransaction(
          Effect.gen(function* () {
            // A tiny table is read whole whichever indexes exist: the plan is asked as for a large one.
            yield* sql`SET LOCAL enable_seqscan = off`
            yield* sql`SET LOCAL enable_sort = off`
            const rows = yield* sql.unsafe<Record<string, unknown>>(`EXPLAIN ${text}`, params)
            return rows.map((row) => String(row["QUERY PLAN"])).join("\n")
          })
        )
    })
  })

describe.each(storeKinds)("audit events store (%s)", (kind) => {
  it.effect("each filter reads its own index in the listing's order", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<[AuditPageQuery, string]> = [
        [{ limit: 10 }, "audit_events_recent"],
        [{ limit: 10, before }, "audit_events_recent"],
        [{ actorId: "u1", limit: 10, before }, "audit_events_actor"],
        [{ targetId: "t1", limit: 10, before }, "audit_events_target"]
      ]
      for (const [query, index] of cases) {
        const plan = yield* planOf(query)
        expect(plan, JSON.stringify(query)).toContain(index)
        expect(plan, JSON.stringify(query)).not.toMatch(/TEMP B-TREE FOR ORDER BY|Sort Key/)
      }
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.effect("pages of events with equal times neither skip nor repeat one", () =>
    Effect.gen(function* () {
      const repo = yield* AuditEventRepo
      const at = new Date("2026-02-03T04:05:06.007Z")
      const written: Array<string> = []
      for (let index = 0; index < 9; index++) {
        written.push(
          yield* repo.insert({
            at: new Date(at.getTime() + (index % 3)),
            actorId: index % 2 === 0 ? "u1" : "u2",
            action: "identity.user_updated",
            targetKind: "user",
            targetId: "t1",
            detail: {},
            requestId: undefined
          })
        )
      }
      const seen: Array<string> = []
      let after: { at: Date; id: string } | undefined
      for (;;) {
        const page = yield* repo.page({ targetId: "t1", limit: 2, before: after })
        seen.push(...page.map((row) => row.id))
        if (page.length < 2) break
        after = { at: page.at(-1)!.at, id: page.at(-1)!.id }
      }
      expect(new Set(seen).size).toBe(9)
      expect(seen.sort()).toEqual([...written].sort())
      const u1 = yield* repo.page({ actorId: "u1", targetId: "t1", limit: 20 })
      expect(u1.map((row) => row.actor_id)).toEqual(["u1", "u1", "u1", "u1", "u1"])
    }).pipe(Effect.provide(layerFor(kind)))
  )
})
