import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Redacted, Ref, Schema } from "effect"
import { PendingAuthorizations } from "../../auth/pending.js"
import { Sealer } from "../../crypto/sealer.js"
import { securityEvent } from "../../events/security-log.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { BrowserSessionRepo } from "../../store/browser-sessions.js"
import { IdentityProviderRepo } from "../../store/identity-providers.js"
import { SessionRepo } from "../../store/sessions.js"
import { UserRepo } from "../../store/users.js"
import { ldapNamespace, oidcNamespace } from "./namespaces.js"
import {
  enabledProblems,
  type IdentityProvidersBody,
  type IdentityProvidersRecord,
  StoredSettings,
  sameLdapDestination,
  sameOidcDestination
} from "./settings.js"

/** The stored connections as sign-in uses them: settings, opened secrets, and each one's namespace. */
export interface StoredConnections {
  readonly revision: number
  readonly settings: StoredSettings
  readonly oidcClientSecret: Redacted.Redacted<string> | undefined
  readonly ldapBindPassword: Redacted.Redacted<string> | undefined
  readonly updatedAt: Date | undefined
}

export type SaveOutcome =
  | {
      readonly _tag: "Saved"
      readonly record: IdentityProvidersRecord
      readonly replaced: ReadonlyArray<"oidc" | "ldap">
    }
  | { readonly _tag: "Stale"; readonly revision: number }
  | { readonly _tag: "Invalid"; readonly problems: ReadonlyArray<string> }

const OIDC_SECRET = "identity_providers:oidc_client_secret"
const LDAP_PASSWORD = "identity_providers:ldap_bind_password"
const decodeSettings = Schema.decodeUnknownSync(Schema.parseJson(StoredSettings))

/** Whether a connection people may have signed in with was replaced or disabled by a save. */
const replacedConnections = (before: StoredConnections, after: StoredConnections) => {
  const changed: Array<"oidc" | "ldap"> = []
  const secretOf = (value: Redacted.Redacted<string> | undefined) => (value === undefined ? "" : Redacted.value(value))
  if (
    before.settings.oidc.enabled &&
    (JSON.stringify(before.settings.oidc) !== JSON.stringify(after.settings.oidc) ||
      secretOf(before.oidcClientSecret) !== secretOf(after.oidcClientSecret))
  ) {
    changed.push("oidc")
  }
  if (
    before.settings.ldap.enabled &&
    (JSON.stringify(before.settings.ldap) !== JSON.stringify(after.settings.ldap) ||
      secretOf(before.ldapBindPassword) !== secretOf(after.ldapBindPassword))
  ) {
    changed.push("ldap")
  }
  return changed
}

/**
 * The identity connections stored in the database (docs/enterprise-sign-in.md, "Identity-provider
 * settings"), applied at once: sign-in reads them on every start. Process-wide and cached; a save
 * replaces the cache. Saving a connection that was enabled with anything changed, or disabling it,
 * revokes the sessions, refresh tokens, browser sign-ins, pending sign-ins and unredeemed codes of its
 * people: they sign in again under the new connection (and a new namespace, when its identity
 * settings changed). Re-enabling revives nothing.
 */
export class IdentityProviders extends Effect.Service<IdentityProviders>()("gateway/IdentityProviders", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* IdentityProviderRepo
    const sealer = yield* Sealer
    const users = yield* UserRepo
    const sessions = yield* SessionRepo
    const browserSessions = yield* BrowserSessionRepo
    const pending = yield* PendingAuthorizations
    const audit = yield* AuditEventRepo
    const cache = yield* Ref.make(Option.none<StoredConnections>())

    const openSecret = (sealed: string | null, context: string) =>
      sealed === null
        ? Effect.succeed(undefined)
        : Effect.map(sealer.open(sealed, context), (bytes) => Redacted.make(Buffer.from(bytes).toString("utf8")))

    const load = Effect.gen(function* () {
      const row = yield* repo.get()
      const connections: StoredConnections = {
        revision: row.revision,
        settings: decodeSettings(row.settings),
        oidcClientSecret: yield* openSecret(row.oidc_client_secret_sealed, OIDC_SECRET).pipe(Effect.orDie),
        ldapBindPassword: yield* openSecret(row.ldap_bind_password_sealed, LDAP_PASSWORD).pipe(Effect.orDie),
        updatedAt: row.revision === 0 ? undefined : row.updated_at
      }
      yield* Ref.set(cache, Option.some(connections))
      return connections
    })

    const current = Effect.flatMap(Ref.get(cache), Option.match({ onNone: () => load, onSome: Effect.succeed }))

    const recordOf = (connections: StoredConnections): IdentityProvidersRecord => ({
      oidc: { ...connections.settings.oidc, client_secret_configured: connections.oidcClientSecret !== undefined },
      ldap: { ...connections.settings.ldap, bind_password_configured: connections.ldapBindPassword !== undefined },
      revision: String(connections.revision),
      updated_at: connections.updatedAt?.toISOString() ?? null
    })

    /** Write-only secrets: absent keeps, empty clears, anything else sets. */
    const nextSecret = (given: string | undefined, kept: Redacted.Redacted<string> | undefined) =>
      given === undefined ? kept : given === "" ? undefined : Redacted.make(given)

    /** A save that omits a stored secret while naming another destination for it: refused, naming the field. */
    const movedSecrets = (before: StoredConnections, body: IdentityProvidersBody): ReadonlyArray<string> => [
      ...(body.oidc.client_secret === undefined &&
      before.oidcClientSecret !== undefined &&
      !sameOidcDestination(before.settings.oidc, body.oidc)
        ? [
            "oidc.client_secret: the issuer, client id or trusted CA changed, so the stored secret is not kept; send the client secret again"
          ]
        : []),
      ...(body.ldap.bind_password === undefined &&
      before.ldapBindPassword !== undefined &&
      !sameLdapDestination(before.settings.ldap, body.ldap)
        ? [
            "ldap.bind_password: the directory's address (url scheme, host or port), bind DN or trusted CA changed, so the stored password is not kept; send the bind password again"
          ]
        : [])
    ]

    /** Ends the stored sessions and browser sign-ins of a replaced connection's people; their ids. */
    const revokeConnection = (namespace: string, at: Date) =>
      Effect.gen(function* () {
        const ids = yield* users.idsInNamespace(namespace)
        let revoked = 0
        for (const id of ids) {
          revoked += yield* sessions.revokeForUser(id, "identity_provider_replaced", at)
          yield* browserSessions.revokeForUser(id, at)
        }
        return { ids, sessions: revoked }
      })

    const save = Effect.fn("IdentityProviders.save")(function* (
      actorId: string,
      expected: number,
      body: IdentityProvidersBody,
      requestId: string | undefined
    ) {
      const before = yield* load
      // Judged against what the administrator read: a save naming another revision is stale at once,
      // so it is never computed from settings the administrator did not see.
      if (before.revision !== expected) return { _tag: "Stale", revision: before.revision } as SaveOutcome
      const { client_secret, ...oidc } = body.oidc
      const { bind_password, ...ldap } = body.ldap
      const after: StoredConnections = {
        revision: before.revision,
        settings: { oidc, ldap },
        oidcClientSecret: nextSecret(client_secret, before.oidcClientSecret),
        ldapBindPassword: nextSecret(bind_password, before.ldapBindPassword),
        updatedAt: before.updatedAt
      }
      const problems = [
        ...movedSecrets(before, body),
        ...enabledProblems(after.settings, {
          oidc: after.oidcClientSecret !== undefined,
          ldapBindPassword: after.ldapBindPassword
        })
      ]
      if (problems.length > 0) return { _tag: "Invalid", problems } as SaveOutcome
      const at = new Date(yield* Clock.currentTimeMillis)
      const replaced = replacedConnections(before, after)
      const written = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const revision = yield* repo.replaceIfRevision(
              expected,
              {
                settings: JSON.stringify(after.settings),
                oidcClientSecretSealed:
                  after.oidcClientSecret === undefined
                    ? null
                    : sealer.seal(Redacted.value(after.oidcClientSecret), OIDC_SECRET),
                ldapBindPasswordSealed:
                  after.ldapBindPassword === undefined
                    ? null
                    : sealer.seal(Redacted.value(after.ldapBindPassword), LDAP_PASSWORD)
              },
              at
            )
            if (revision === undefined) return undefined
            // In the same transaction: a save that committed has ended its old connection's sessions.
            const revocations = []
            for (const connection of replaced) {
              const namespace =
                connection === "oidc" ? oidcNamespace(before.settings.oidc) : ldapNamespace(before.settings.ldap)
              revocations.push({ connection, ...(yield* revokeConnection(namespace, at)) })
            }
            yield* audit.insert({
              at,
              actorId,
              action: "identity.providers_updated",
              targetKind: "identity_providers",
              targetId: "identity_providers",
              detail: { revision, replaced, oidc_enabled: oidc.enabled, ldap_enabled: ldap.enabled },
              requestId
            })
            return { revision, revocations }
          })
        )
        .pipe(Effect.orDie)
      if (written === undefined) return { _tag: "Stale", revision: (yield* load).revision } as SaveOutcome
      for (const revoked of written.revocations) {
        yield* pending.forgetConnection(new Set(revoked.ids), revoked.connection === "oidc")
      }
      const saved = yield* load
      yield* securityEvent("identity.providers_updated", {
        actor: actorId,
        revision: written.revision,
        replaced,
        revoked: written.revocations.map((revoked) => ({
          connection: revoked.connection,
          users: revoked.ids.length,
          sessions: revoked.sessions
        })),
        oidc_enabled: oidc.enabled,
        ldap_enabled: ldap.enabled
      })
      return { _tag: "Saved", record: recordOf(saved), replaced } as SaveOutcome
    })

    return { current, record: Effect.map(current, recordOf), save } as const
  })
}) {}
