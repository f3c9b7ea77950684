import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type NewSigningKey, SigningKeyRepo } from "../../src/store/signing-keys.js"
import { toStoredTimestamp } from "../../src/store/timestamp.js"
import { storeKinds, testStoreLayer } from "../support/databases.js"

const key = (kid: string, createdAt = new Date("2025-01-01T00:00:00Z")): NewSigningKey => ({
  kid,
  publicJwk: { kty: "OKP", crv: "Ed25519", x: `x-${kid}`, kid, alg: "EdDSA", use: "sig" },
  sealedPrivate: `v1.sealed.${kid}`,
  createdAt
})

const insertRetired = (kid: string, retiredAt: Date) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const row = { ...key(kid), status: "retired" }
    return sql`INSERT INTO signing_keys ${sql.insert({
      kid,
      alg: "EdDSA",
      public_jwk: JSON.stringify(row.publicJwk),
      sealed_private: row.sealedPrivate,
      status: "retired",
      created_at: toStoredTimestamp(row.createdAt),
      retired_at: toStoredTimestamp(retiredAt)
    })}`
  })

describe.each(storeKinds)("SigningKeyRepo on %s", (kind) => {
  const provide = <A, E>(effect: Effect.Effect<A, E, SigningKeyRepo | SqlClient.SqlClient>) =>
    effect.pipe(Effect.provide(SigningKeyRepo.Default), Effect.provide(testStoreLayer(kind)))

  it.effect("keeps exactly one active key: a second insert returns the first", () =>
    provide(
      Effect.gen(function* () {
        const repo = yield* SigningKeyRepo
        expect(Option.isNone(yield* repo.findActive)).toBe(true)
        const first = yield* repo.insertActiveOrGetExisting(key("first"))
        expect(first).toMatchObject({ kid: "first", status: "active", retired_at: null })
        expect(first.public_jwk).toEqual(key("first").publicJwk)
        expect(first.created_at).toEqual(new Date("2025-01-01T00:00:00Z"))
        const second = yield* repo.insertActiveOrGetExisting(key("second"))
        expect(second.kid).toBe("first")
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT kid FROM signing_keys`).toEqual([{ kid: "first" }])
      })
    )
  )

  it.effect("publishes the active key and keys retired within the window, newest first", () =>
    provide(
      Effect.gen(function* () {
        const repo = yield* SigningKeyRepo
        yield* repo.insertActiveOrGetExisting(key("active", new Date("2025-01-03T00:00:00Z")))
        yield* insertRetired("recent", new Date("2025-01-02T00:05:00Z"))
        yield* insertRetired("old", new Date("2025-01-01T23:00:00Z"))
        const published = yield* repo.listPublished(new Date("2025-01-02T00:00:00Z"))
        expect(published.map((row) => row.kid)).toEqual(["active", "recent"])
        expect(published[1]?.retired_at).toEqual(new Date("2025-01-02T00:05:00Z"))
      })
    )
  )

  it.effect("rejects a retired key without a retirement time", () =>
    provide(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const insert = sql`INSERT INTO signing_keys (kid, alg, public_jwk, sealed_private, status, created_at)
          VALUES ('k', 'EdDSA', '{}', 's', 'retired', ${toStoredTimestamp(new Date())})`
        const error = yield* Effect.flip(insert)
        expect(error._tag).toBe("SqlError")
      })
    )
  )
})
