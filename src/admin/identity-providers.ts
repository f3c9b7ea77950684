import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { Config } from "../config/service.js"
import { authenticate } from "../identity/ldap/authenticate.js"
import { probeDirectory } from "../identity/ldap/probe.js"
import { ConnectionTests, testRecord } from "../identity/providers/connection-tests.js"
import { ConnectionDraftBody, ldapDraftSettings, oidcDraftConnection } from "../identity/providers/draft.js"
import { IdentityProviders } from "../identity/providers/service.js"
import { IdentityProvidersBody } from "../identity/providers/settings.js"
import { probeConnection } from "../identity/upstream/flow.js"
import { AdminCaller, ManagementApi } from "./api.js"
import { decodeBody, ifMatchRevision, readJsonObject } from "./body.js"
import { apiError, requestId } from "./errors.js"

/** A draft's problems rather than the connection to try. */
const isProblems = (value: object): value is ReadonlyArray<string> => Array.isArray(value)

/**
 * The handlers of `/api/v1/identity-providers` (docs/enterprise-sign-in.md, "Identity-provider
 * settings"). A save replaces both connections whole, only at the revision the administrator read.
 */
export const IdentityProvidersLive = HttpApiBuilder.group(ManagementApi, "identityProviders", (handlers) =>
  Effect.gen(function* () {
    const providers = yield* IdentityProviders
    const tests = yield* ConnectionTests

    /**
     * The draft OIDC connection of a probe or test body, or a 400 naming every problem: the rules a save
     * applies (the same check), and what a draft needs to be tried.
     */
    const oidcDraft = (draft: ConnectionDraftBody) =>
      Effect.gen(function* () {
        if (draft.oidc === undefined)
          return yield* apiError(400, "invalid_request", 'oidc: required when source is "oidc"')
        const connection = oidcDraftConnection(draft.oidc, yield* providers.current)
        if (isProblems(connection)) return yield* apiError(400, "invalid_request", connection.join("; "))
        return connection
      })

    /** The draft LDAP connection of a probe or test body, as the OIDC one: a save's rules, and complete. */
    const ldapDraft = (draft: ConnectionDraftBody) =>
      Effect.gen(function* () {
        if (draft.ldap === undefined)
          return yield* apiError(400, "invalid_request", 'ldap: required when source is "ldap"')
        const settings = ldapDraftSettings(draft.ldap, yield* providers.current)
        if (isProblems(settings)) return yield* apiError(400, "invalid_request", settings.join("; "))
        return settings
      })

    /** `POST …/probe` for LDAP: a connection (TLS as sign-in does it) and the service account's bind, nothing else. */
    const probeLdap = (draft: ConnectionDraftBody) =>
      Effect.gen(function* () {
        const probed = yield* Effect.either(probeDirectory(yield* ldapDraft(draft)))
        return probed._tag === "Left"
          ? { source: "ldap" as const, reachable: false, reason: probed.left.reason, detail: probed.left.detail }
          : { source: "ldap" as const, reachable: true }
      })

    /**
     * `POST …/test` for LDAP: the directory's part of a sign-in as `username`, answered at once. Nothing is
     * stored, nobody is created, and nothing is counted by the sign-in throttle (the administrator is not
     * the person).
     */
    const testLdap = (draft: ConnectionDraftBody) =>
      Effect.gen(function* () {
        const settings = yield* ldapDraft(draft)
        if (draft.username === undefined || draft.password === undefined) {
          return yield* apiError(400, "invalid_request", 'username, password: required when source is "ldap"')
        }
        const found = yield* Effect.either(authenticate(settings, draft.username, Redacted.make(draft.password)))
        if (found._tag === "Left") {
          return {
            source: "ldap" as const,
            status: "failed" as const,
            reason: found.left.reason,
            detail: found.left.detail
          }
        }
        const identity = found.right
        return {
          source: "ldap" as const,
          status: "succeeded" as const,
          identity: {
            subject: identity.subject,
            name: identity.name,
            groups: identity.groups.map((group) => group.name),
            departments: [],
            acr: null,
            auth_time: null
          }
        }
      })

    return handlers
      .handle("read", () => providers.record)
      .handleRaw("probe", ({ request }) =>
        Effect.gen(function* () {
          const draft = yield* decodeBody(ConnectionDraftBody, yield* readJsonObject(request))
          if (draft.source === "ldap") return yield* probeLdap(draft)
          const found = yield* Effect.either(probeConnection(yield* oidcDraft(draft)))
          if (found._tag === "Left") {
            return {
              source: "oidc" as const,
              reachable: false,
              reason: found.left.reason,
              ...(found.left.detail === undefined ? {} : { detail: found.left.detail })
            }
          }
          const { issuer, authorizationEndpoint, tokenEndpoint, signingKeys } = found.right
          return {
            source: "oidc" as const,
            reachable: true,
            issuer,
            ...(authorizationEndpoint === undefined ? {} : { authorization_endpoint: authorizationEndpoint }),
            ...(tokenEndpoint === undefined ? {} : { token_endpoint: tokenEndpoint }),
            signing_keys: signingKeys
          }
        })
      )
      .handleRaw("test", ({ request }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const draft = yield* decodeBody(ConnectionDraftBody, yield* readJsonObject(request))
          if (draft.source === "ldap") return yield* testLdap(draft)
          const connection = yield* oidcDraft(draft)
          const test = yield* tests.open(admin.userId, (yield* providers.current).revision, connection)
          const { config } = yield* Config
          const start = new URL("/sso/login/test", new URL(config.auth.issuer).origin)
          start.searchParams.set("test", test.id)
          start.searchParams.set("token", test.startToken ?? "")
          return {
            id: test.id,
            source: "oidc" as const,
            status: "waiting" as const,
            start_url: start.toString(),
            expires_at: new Date(test.expiresAt).toISOString()
          }
        })
      )
      .handle("testResult", ({ path }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const found = yield* tests.resultFor(path.id, admin.userId, (yield* providers.current).revision)
          if (Option.isNone(found)) {
            return yield* apiError(
              404,
              "not_found",
              "No such connection test (they last 5 minutes, end on a save, and belong to who started them)."
            )
          }
          return testRecord(found.value)
        })
      )
      .handleRaw("replace", ({ request }) =>
        Effect.gen(function* () {
          const admin = yield* AdminCaller
          const revision = yield* ifMatchRevision(request)
          const body = yield* decodeBody(IdentityProvidersBody, yield* readJsonObject(request))
          const { config } = yield* Config
          // One source per connection: the YAML's `auth.sso.upstream` is the OIDC connection there.
          if (body.oidc.enabled && config.auth.sso.upstream !== undefined) {
            return yield* apiError(
              409,
              "managed_in_configuration",
              "oidc.enabled: this gateway's identity provider is set in its configuration file (auth.sso.upstream); remove it there to manage the OIDC connection here."
            )
          }
          const outcome = yield* providers.save(admin.userId, revision, body, yield* requestId)
          switch (outcome._tag) {
            case "Invalid":
              return yield* apiError(400, "invalid_request", outcome.problems.join("; "))
            case "Stale":
              return yield* apiError(
                412,
                "precondition_failed",
                `The identity-provider settings changed since they were read: their revision is now "${outcome.revision}". Read them again.`
              )
            case "Saved":
              return outcome.record
          }
        })
      )
  })
)
