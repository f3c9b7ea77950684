/**
 * docs/access-policy.md, "Group names": a permission group's name may not hold invisible or
 * direction-changing characters, nor begin or end with whitespace (400 naming `name`), and no two
 * permission groups may have names that read alike — equal once NFC-normalized, case-folded and with
 * whitespace runs as one space, or that look alike by their UTS #39 skeletons (409 `name_taken`) —
 * through the Management API's create and rename, on
 * SQLite and on PostgreSQL; two racing creates of look-alike names make one group.
 */

import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"

const setup = (kind: (typeof storeKinds)[number]) =>
  Effect.gen(function* () {
    const gateway = yield* oauthGateway({ kind })
    return managementApi(gateway, yield* adminToken(gateway))
  })

const groupNames = (body: Record<string, unknown>) =>
  (body["groups"] as ReadonlyArray<Record<string, unknown>>).map((group) => group["name"])

describe.each(storeKinds)("Management API: permission group names (%s)", (kind) => {
  it.scoped(
    "refuses invisible, direction-changing and edge-whitespace names with a 400 naming `name`, and look-alike names with name_taken, on create and rename",
    () =>
      Effect.gen(function* () {
        const api = yield* setup(kind)
        const created = yield* api.post("/api/v1/identities/groups", { name: "Admins2" })
        expect(created.status).toBe(201)

        for (const [name, why] of [
          ["Admins\u200b2", "U+200B"],
          ["x\u202eevil", "U+202E"],
          ["Admins\u200d2", "U+200D"],
          ["\u2066Admins2\u2069", "U+2066"],
          ["Admins\ufeff2", "U+FEFF"],
          ["Admins\u00ad2", "U+00AD"],
          ["Admins\u31642", "U+3164"],
          ["Admins\u20282", "U+2028"]
        ] as const) {
          const refused = yield* api.post("/api/v1/identities/groups", { name })
          expect(refused.status, JSON.stringify(name)).toBe(400)
          expect(refused.body["error"]).toBe("invalid_request")
          expect(refused.body["error_description"]).toContain(
            `name: must not contain invisible or direction-changing characters (${why}`
          )
        }
        for (const name of ["Admins2 ", " Admins2", "Admins2\u00a0", "\u3000Admins2"]) {
          const refused = yield* api.post("/api/v1/identities/groups", { name })
          expect(refused.status, JSON.stringify(name)).toBe(400)
          expect(refused.body["error_description"]).toContain("name: must not begin or end with whitespace")
        }
        // Letters of another script inside a word read like the Latin name (a Greek Alpha, a Cyrillic a).
        for (const name of ["\u0391dmins2", "\u0430dmins2", "Adm\u0456ns2"]) {
          const refused = yield* api.post("/api/v1/identities/groups", { name })
          expect(refused.status, JSON.stringify(name)).toBe(400)
          expect(refused.body["error_description"]).toContain("name: must not mix scripts within a word")
        }
        // Read alike once normalized: case, full case folding, composed and decomposed accents, spacing.
        for (const name of ["admins2", "ADMINS2", "Admins2"]) {
          const taken = yield* api.post("/api/v1/identities/groups", { name })
          expect(taken.status, name).toBe(409)
          expect(taken.body["error"]).toBe("name_taken")
          expect(taken.body["error_description"]).toContain('"Admins2"')
        }
        expect((yield* api.post("/api/v1/identities/groups", { name: "Café  Team" })).status).toBe(201)
        for (const name of ["CAFE\u0301 TEAM", "Café Team", "café\u00a0team"]) {
          expect((yield* api.post("/api/v1/identities/groups", { name })).body["error"], name).toBe("name_taken")
        }
        // Other spaces, an empty-gap symbol, a mark left apart from its letter: each read as the plain name.
        for (const [name, why] of [
          ["Admini\u200astrators", "must not contain narrow spaces (U+200A at index 6)"],
          ["Administrators\ufffc", "U+FFFC at index 14"],
          ["Admi\u0307nistrators", 'must not contain a combining mark apart from its letter (U+0307 after "i")']
        ] as const) {
          const refused = yield* api.post("/api/v1/identities/groups", { name })
          expect(refused.status, JSON.stringify(name)).toBe(400)
          expect(refused.body["error_description"], JSON.stringify(name)).toContain(why)
        }
        expect((yield* api.post("/api/v1/identities/groups", { name: "Straße" })).status).toBe(201)
        expect((yield* api.post("/api/v1/identities/groups", { name: "STRASSE" })).body["error"]).toBe("name_taken")

        // Names that look like another group's (UTS #39 skeletons): a word wholly of another script,
        // letters that look alike within Latin, a punctuation look-alike.
        for (const name of ["COPE", "Ops-team", "Team 1"]) {
          expect((yield* api.post("/api/v1/identities/groups", { name })).status, name).toBe(201)
        }
        for (const [name, like] of [
          ["\u0421\u041e\u0420\u0415", "COPE"],
          ["Adrnins2", "Admins2"],
          ["Ops\u2010team", "Ops-team"],
          ["Team l", "Team 1"]
        ] as const) {
          const refused = yield* api.post("/api/v1/identities/groups", { name })
          expect(refused.status, JSON.stringify(name)).toBe(409)
          expect(refused.body["error"]).toBe("name_taken")
          expect(refused.body["error_description"]).toContain(`looks like the permission group "${like}"`)
        }
        // Different names still differ: a digit added, an accent.
        for (const name of ["Admins3", "Tèam 1"]) {
          expect((yield* api.post("/api/v1/identities/groups", { name })).status, name).toBe(201)
        }

        // Renames follow the same rules; a group may change the case of its own name.
        const other = (yield* api.post("/api/v1/identities/groups", { name: "Readers" })).body
        const path = `/api/v1/identities/groups/${String(other["id"])}`
        const lookAlike = yield* api.put(path, { name: "ADMINS2" }, ifMatch(other))
        expect(lookAlike).toMatchObject({ status: 409, body: { error: "name_taken" } })
        const invisible = yield* api.put(path, { name: "Read\u200bers" }, ifMatch(other))
        expect(invisible.status).toBe(400)
        expect(invisible.body["error_description"]).toContain("name: must not contain invisible")
        const lookingAlike = yield* api.put(path, { name: "C\u041e\u0420\u0415" }, ifMatch(other))
        expect(lookingAlike.status).toBe(400)
        const skeletal = yield* api.put(path, { name: "Adrnins2" }, ifMatch(other))
        expect(skeletal).toMatchObject({ status: 409, body: { error: "name_taken" } })
        const recased = yield* api.put(path, { name: "READERS" }, ifMatch(other))
        expect(recased).toMatchObject({ status: 200, body: { name: "READERS" } })

        const listed = groupNames((yield* api.get("/api/v1/identities")).body)
        expect(listed.filter((name) => String(name).toLowerCase() === "admins2")).toEqual(["Admins2"])
      })
  )

  it.scoped(
    "a group named before a rule refused such names can still be edited with its name sent unchanged (as the console does); a new name meets every rule",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const api = managementApi(gateway, yield* adminToken(gateway))
        const created = (yield* api.post("/api/v1/identities/groups", { name: "DevOps" })).body
        // As an earlier version could store it: a word of Latin letters and a Cyrillic O.
        const oldName = "Dev\u041eps"
        yield* inGateway(gateway)(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`UPDATE groups SET name = ${oldName} WHERE id = ${String(created["id"])}`
          )
        )
        const path = `/api/v1/identities/groups/${String(created["id"])}`
        const kept = yield* api.put(path, { name: oldName, enabled: false }, ifMatch(created))
        expect(kept).toMatchObject({ status: 200, body: { name: oldName, enabled: false } })
        const renamed = yield* api.put(path, { name: "\u041eps" }, ifMatch(kept.body))
        expect(renamed.status).toBe(400)
        expect(renamed.body["error_description"]).toContain("name: must not mix scripts within a word")
        const compatibility = yield* api.put(path, { name: "\u{1d5a0}dmins" }, ifMatch(kept.body))
        expect(compatibility.status).toBe(400)
        expect(compatibility.body["error_description"]).toContain("name: must not contain compatibility characters")
      })
  )

  it.scoped("two creates of look-alike names racing make one group; the other is name_taken", () =>
    Effect.gen(function* () {
      const api = yield* setup(kind)
      const answers = yield* Effect.all(
        [
          api.post("/api/v1/identities/groups", { name: "Operators" }),
          api.post("/api/v1/identities/groups", { name: "OPERATORS" }),
          api.post("/api/v1/identities/groups", { name: "operators" })
        ],
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409])
      const listed = groupNames((yield* api.get("/api/v1/identities")).body)
      expect(listed.filter((name) => String(name).toLowerCase() === "operators")).toHaveLength(1)
      // Names that only look alike (their keys differ; the look-alike key is not unique in the store).
      const alike = yield* Effect.all(
        ["Cl0ud9", "ClOud9", "C1oud9", "Cloud9"].map((name) => api.post("/api/v1/identities/groups", { name })),
        { concurrency: "unbounded" }
      )
      expect(alike.map((answer) => answer.status).sort()).toEqual([201, 409, 409, 409])
    })
  )
})
