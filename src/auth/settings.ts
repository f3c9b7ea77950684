import { Effect } from "effect"
import type { DownstreamClient, GatewayConfig } from "../config/schema.js"
import { Config } from "../config/service.js"
import { IdentityProviders } from "../identity/providers/service.js"
import { UpstreamSignIn } from "../identity/upstream/service.js"
import type { ComposedSources } from "../sources/schema.js"
import { scopesSupported } from "./scopes.js"

/** What the authorization server reads from the configuration (all static: `auth`, `client_authorization`). */
export interface AuthSettings {
  readonly issuer: string
  readonly origin: string
  /** https issuers get `Secure` `__Host-` cookies; plain http is only allowed on loopback (development). */
  readonly secureCookies: boolean
  readonly clients: ReadonlyArray<typeof DownstreamClient.Type>
  readonly scopesSupported: ReadonlyArray<string>
  /** `client_authorization.enabled`: people consent per client, grants are listed in the portal. */
  readonly consentRequired: boolean
  /** `client_authorization.client_id`: the first-party portal client, which needs no consent. */
  readonly portalClientId: string | undefined
  /** The enterprise identity provider's host, shown on the sign-in page; undefined without `auth.sso.upstream`. */
  readonly upstreamHost: string | undefined
  /**
   * An LDAP connection is stored and enabled (docs/ldap.md): the sign-in page offers its directory
   * account form. Never in the configuration file, so false until `authSettings` reads the stored one.
   */
  readonly ldapEnabled: boolean
}

export const authSettingsOf = (config: GatewayConfig, sources?: ComposedSources): AuthSettings => {
  const issuer = config.auth.issuer
  const url = new URL(issuer)
  return {
    issuer,
    origin: url.origin,
    secureCookies: url.protocol === "https:",
    clients: config.auth.sso.clients,
    scopesSupported: scopesSupported(config, sources),
    consentRequired: config.client_authorization.enabled,
    portalClientId: config.client_authorization.client_id,
    upstreamHost: config.auth.sso.upstream === undefined ? undefined : new URL(config.auth.sso.upstream.issuer).host,
    ldapEnabled: false
  }
}

/** The settings with the identity connections offered now (a stored connection may change at any time). */
export const authSettings = Effect.gen(function* () {
  const loaded = yield* Config
  const settings = authSettingsOf(loaded.config, loaded.sources)
  const upstream = yield* (yield* UpstreamSignIn).current
  const stored = yield* (yield* IdentityProviders).current
  return {
    ...settings,
    upstreamHost: upstream === undefined ? undefined : new URL(upstream.issuer).host,
    ldapEnabled: stored.settings.ldap.enabled
  } satisfies AuthSettings
})
