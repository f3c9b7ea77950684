import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { StoredTimestamp, toStoredTimestamp } from "./timestamp.js"

/** The stored identity connections (migration 0010): settings JSON without secrets, sealed secrets beside. */
export const IdentityProvidersRow = Schema.Struct({
  revision: Schema.Int.pipe(Schema.nonNegative()),
  settings: Schema.String,
  oidc_client_secret_sealed: Schema.NullOr(Schema.String),
  ldap_bind_password_sealed: Schema.NullOr(Schema.String),
  updated_at: StoredTimestamp
})
export type IdentityProvidersRow = typeof IdentityProvidersRow.Type

export interface IdentityProvidersWrite {
  readonly settings: string
  readonly oidcClientSecretSealed: string | null
  readonly ldapBindPasswordSealed: string | null
}

const Rows = Schema.Array(IdentityProvidersRow)
const Revisions = Schema.Array(Schema.Struct({ revision: Schema.Int }))

/**
 * Persistence of the one `identity_providers` row. A save replaces the whole row only if its revision
 * is still the one the administrator read (`If-Match`): one conditional UPDATE, so two saves holding
 * the same revision cannot both succeed.
 */
export class IdentityProviderRepo extends Effect.Service<IdentityProviderRepo>()("gateway/IdentityProviderRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const get = Effect.fn("IdentityProviderRepo.get")(function* () {
      const rows =
        yield* sql`SELECT revision, settings, oidc_client_secret_sealed, ldap_bind_password_sealed, updated_at
        FROM identity_providers WHERE id = 1`.pipe(Effect.flatMap(Schema.decodeUnknown(Rows)), Effect.orDie)
      const row = rows[0]
      if (row === undefined)
        return yield* Effect.dieMessage("identity_providers has no row: the store was not completely created")
      return row
    })

    /** The new revision, or undefined when the stored one is no longer `expected`. */
    const replaceIfRevision = Effect.fn("IdentityProviderRepo.replaceIfRevision")(function* (
      expected: number,
      next: IdentityProvidersWrite,
      at: Date
    ) {
      const rows = yield* sql`UPDATE identity_providers SET revision = revision + 1, settings = ${next.settings},
        oidc_client_secret_sealed = ${next.oidcClientSecretSealed},
        ldap_bind_password_sealed = ${next.ldapBindPasswordSealed}, updated_at = ${toStoredTimestamp(at)}
        WHERE id = 1 AND revision = ${expected} RETURNING revision`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Revisions)),
        Effect.orDie
      )
      return rows[0]?.revision
    })

    return { get, replaceIfRevision } as const
  })
}) {}
