import { Redacted, Schema } from "effect"
import { connectionOf, type UpstreamConnection } from "../upstream/connection.js"
import { oidcNamespace } from "./namespaces.js"
import type { StoredConnections } from "./service.js"
import { IdentityProvidersBody, type OidcSettings } from "./settings.js"

/**
 * `POST /api/v1/identity-providers/probe` and `/test` (docs/enterprise-sign-in.md, "Trying a
 * connection"): a draft of one connection, never saved. A draft without its secret uses the stored one.
 */
export const ConnectionDraftBody = Schema.Struct({
  source: Schema.Literal("oidc", "ldap"),
  oidc: Schema.optional(IdentityProvidersBody.fields.oidc),
  ldap: Schema.optional(IdentityProvidersBody.fields.ldap),
  /** LDAP test only: the person to sign in as (nothing is stored, no one is created). */
  username: Schema.optional(Schema.String.pipe(Schema.maxLength(256))),
  password: Schema.optional(Schema.String.pipe(Schema.maxLength(1024)))
}).annotations({ identifier: "ConnectionDraft" })
export type ConnectionDraftBody = typeof ConnectionDraftBody.Type

/** The draft OIDC connection to try, or what is missing. */
export const oidcDraftConnection = (
  draft: NonNullable<ConnectionDraftBody["oidc"]>,
  stored: StoredConnections
): UpstreamConnection | string => {
  const { client_secret, ...settings } = draft
  const secret =
    client_secret === undefined
      ? stored.oidcClientSecret
      : client_secret === ""
        ? undefined
        : Redacted.make(client_secret)
  if (settings.issuer === undefined) return "oidc.issuer: required"
  if (settings.client_id === undefined) return "oidc.client_id: required"
  if (secret === undefined) return "oidc.client_secret: required (none is stored)"
  return oidcConnectionOf({ ...settings, issuer: settings.issuer, client_id: settings.client_id }, secret)
}

/** A complete OIDC connection setting as sign-in uses it. */
export const oidcConnectionOf = (
  oidc: OidcSettings & { readonly issuer: string; readonly client_id: string },
  secret: Redacted.Redacted<string>
): UpstreamConnection => ({
  ...connectionOf({ ...oidc, protocol: "oidc", client_secret_env: "" }, secret, oidc.ca_pem),
  namespace: oidcNamespace(oidc)
})
