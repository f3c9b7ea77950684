import { Effect } from "effect"
import { ldapNamespace } from "../providers/namespaces.js"
import { IdentityProviders } from "../providers/service.js"
import { UpstreamSignIn } from "../upstream/service.js"

/** The identity connections a directory snapshot can be about, by the name a push or an administrator uses. */
export type DirectoryConnection = "oidc" | "ldap"
export const directoryConnections: ReadonlyArray<DirectoryConnection> = ["oidc", "ldap"]

/**
 * The namespace (docs/enterprise-sign-in.md, "Identities") of the people a snapshot is about:
 * `oidc` the OIDC or OAuth2 connection (`auth.sso.upstream`, or the stored one), `ldap` the stored
 * LDAP connection when enabled; `null` (a push without `?provider`) the OIDC one, else LDAP.
 * Undefined when no such connection is configured (or `wanted` names none).
 */
export const directoryProvider = (wanted: string | null) =>
  Effect.gen(function* () {
    const oidc = yield* (yield* UpstreamSignIn).current
    const { settings } = yield* (yield* IdentityProviders).current
    const ldap = settings.ldap.enabled ? ldapNamespace(settings.ldap) : undefined
    if (wanted === "ldap") return ldap
    if (wanted === "oidc") return oidc?.namespace
    if (wanted !== null) return undefined
    return oidc?.namespace ?? ldap
  })
