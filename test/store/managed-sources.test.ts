/**
 * The managed tool sources' repositories (migration 0020) on SQLite and PostgreSQL: one id namespace
 * across the four kinds, writes only at the revision read — of racing writers exactly one wins — the
 * initialization marker set once, and proposals moving between states by one conditional update.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { ManagedSourceRepo } from "../../src/store/managed-sources.js"
import { ProposalRepo } from "../../src/store/source-proposals.js"
import { storeKinds, testStoreLayer } from "../support/databases.js"

const layerFor = (kind: (typeof storeKinds)[number]) =>
  Layer.mergeAll(ManagedSourceRepo.Default, ProposalRepo.Default).pipe(Layer.provideMerge(testStoreLayer(kind)))

const at = new Date("2026-01-02T03:04:05.000Z")
const source = (id: string, kind: "backend" | "tool_group" = "backend") => ({
  id,
  kind,
  definition: JSON.stringify({ id }),
  at,
  by: "u1"
})

describe.each(storeKinds)("managed sources store (%s)", (kind) => {
  it.effect("an id is unique across every kind: a second insert of it, of another kind, does nothing", () =>
    Effect.gen(function* () {
      const repo = yield* ManagedSourceRepo
      expect(yield* repo.insert(source("crm"))).toBe(true)
      expect(yield* repo.insert(source("crm", "tool_group"))).toBe(false)
      const stored = yield* repo.find("crm")
      expect(Option.map(stored, (row) => [row.kind, row.revision, row.updated_at.toISOString()])).toEqual(
        Option.some(["backend", 1, at.toISOString()])
      )
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.effect("of two concurrent updates at one revision exactly one wins; a delete needs the current revision", () =>
    Effect.gen(function* () {
      const repo = yield* ManagedSourceRepo
      yield* repo.insert(source("crm"))
      const results = yield* Effect.all(
        Array.from({ length: 6 }, (_, index) => repo.replaceIfRevision("crm", 1, `{"n":${index}}`, at, "u2")),
        { concurrency: "unbounded" }
      )
      expect(results.filter((each) => each === 2)).toHaveLength(1)
      expect(results.filter((each) => each === undefined)).toHaveLength(5)
      expect(yield* repo.deleteIfRevision("crm", 1)).toBe(false)
      const deletes = yield* Effect.all([repo.deleteIfRevision("crm", 2), repo.deleteIfRevision("crm", 2)], {
        concurrency: "unbounded"
      })
      expect(deletes.filter(Boolean)).toHaveLength(1)
      expect(Option.isNone(yield* repo.find("crm"))).toBe(true)
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.effect("of two concurrent creates of one id exactly one wins", () =>
    Effect.gen(function* () {
      const repo = yield* ManagedSourceRepo
      const results = yield* Effect.all(
        [repo.insert(source("x")), repo.insert(source("x", "tool_group")), repo.insert(source("x"))],
        { concurrency: "unbounded" }
      )
      expect(results.filter(Boolean)).toHaveLength(1)
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.effect("managed storage is initialized once: the marker is set by the first writer only", () =>
    Effect.gen(function* () {
      const repo = yield* ManagedSourceRepo
      expect(Option.isNone(yield* repo.initialized())).toBe(true)
      const marks = yield* Effect.all([repo.markInitialized(at, "u1"), repo.markInitialized(at, "u2")], {
        concurrency: "unbounded"
      })
      expect(marks.filter(Boolean)).toHaveLength(1)
      const marker = yield* repo.initialized()
      expect(Option.map(marker, (each) => each.at.toISOString())).toEqual(Option.some(at.toISOString()))
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.effect("a proposal leaves pending_approval once: of two concurrent approvals one starts applying", () =>
    Effect.gen(function* () {
      const proposals = yield* ProposalRepo
      yield* proposals.insert({
        id: "p1",
        kind: "backend",
        targetId: "crm",
        action: "create",
        definition: "{}",
        baseRevisions: { crm: 0 },
        proposedBy: { user_id: "u1", name: "Ann" },
        at
      })
      const moves = yield* Effect.all(
        [
          proposals.transition("p1", "pending_approval", "applying", { decidedBy: { user_id: "u2", name: "Bo" }, at }),
          proposals.transition("p1", "pending_approval", "rejected", { decidedBy: { user_id: "u3", name: "Cy" }, at })
        ],
        { concurrency: "unbounded" }
      )
      expect(moves.filter(Boolean)).toHaveLength(1)
      const row = Option.getOrThrow(yield* proposals.find("p1"))
      expect(row.base_revisions).toEqual({ crm: 0 })
      expect(row.decided_at?.toISOString()).toBe(at.toISOString())
      expect(["applying", "rejected"]).toContain(row.state)
      yield* proposals.insert({
        id: "p2",
        kind: "tool_group",
        targetId: "g",
        action: "update",
        definition: "{}",
        baseRevisions: { g: 3, crm: 1 },
        proposedBy: { user_id: "u1", name: "Ann" },
        at
      })
      expect(yield* proposals.transitionAll("pending_approval", "invalidated", "restarted")).toEqual(["p2"])
      expect((yield* proposals.list("invalidated")).map((each) => [each.id, each.failure])).toEqual([
        ["p2", "restarted"]
      ])
    }).pipe(Effect.provide(layerFor(kind)))
  )
})
