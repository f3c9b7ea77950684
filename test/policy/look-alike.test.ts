/**
 * Names that look alike (src/policy/look-alike.ts, docs/access-policy.md, "Group names"): UTS #39
 * skeletons, taken before and after case folding, meet whole-script and Latin-in-Latin look-alikes;
 * migration 0023 gives every permission group its key.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { lookAlikeKey, skeleton } from "../../src/policy/look-alike.js"
import { storeKinds, storeLayer, withStorage } from "../support/databases.js"

describe("lookAlikeKey", () => {
  it.each([
    ["\u0421\u041e\u0420\u0415", "COPE", "a word wholly in Cyrillic"],
    ["\u0392\u0395\u03a4\u0391", "BETA", "a word wholly in Greek capitals"],
    ["Adrnins", "Admins", "rn and m"],
    ["Team l", "Team 1", "l and 1"],
    ["Il", "ll", "a capital I and an l, before case folding"],
    ["Sales \u0415\u041c\u0415\u0410", "Sales EMEA", "a Cyrillic word beside a Latin one"],
    ["Ops\u2010team", "Ops-team", "U+2010 and a hyphen-minus"],
    ["AdmIns", "Admlns", "a capital I inside a word and an l"]
  ])("%s looks like %s (%s)", (a, b) => {
    expect(lookAlikeKey(a)).toBe(lookAlikeKey(b))
  })

  it.each([
    ["Admins", "Admins2"],
    ["Finance", "F\u00ednance"],
    ["Team 1", "Team 2"],
    ["\u0438\u043d\u0436\u0435\u043d\u0435\u0440\u044b", "engineers"]
  ])("%s does not look like %s", (a, b) => {
    expect(lookAlikeKey(a)).not.toBe(lookAlikeKey(b))
  })

  it("a skeleton is stable: the skeleton of a skeleton is itself", () => {
    for (const text of ["\u0421\u041e\u0420\u0415", "Adrnins", "\u{1d5a0}dmins", "Ops\u2010team"]) {
      expect(skeleton(skeleton(text))).toBe(skeleton(text))
    }
  })
})

describe.each(storeKinds)("migration 0023 (%s)", (kind) => {
  it.scoped("every permission group has its look-alike key, the built-in Administrators included", () =>
    Effect.gen(function* () {
      const storage = yield* withStorage(kind)
      const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`SELECT name, look_key FROM groups WHERE kind = 'permission'`.pipe(
          Effect.flatMap(
            Schema.decodeUnknown(Schema.Array(Schema.Struct({ name: Schema.String, look_key: Schema.String })))
          )
        )
      ).pipe(Effect.provide(Layer.orDie(storeLayer(storage))))
      expect(rows.length).toBeGreaterThan(0)
      for (const row of rows) expect(row.look_key, row.name).toBe(lookAlikeKey(row.name))
    })
  )
})
