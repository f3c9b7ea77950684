import { Data, Effect, Redacted } from "effect"
import { Config } from "../../config/service.js"
import { securityEvent } from "../../events/security-log.js"
import { authenticate } from "../ldap/authenticate.js"
import { probeDirectory } from "../ldap/probe.js"
import { probeConnection } from "../upstream/flow.js"
import { ConnectionTests } from "./connection-tests.js"
import { type ConnectionDraftBody, ldapDraftSettings, oidcDraftConnection } from "./draft.js"
import { IdentityProviders } from "./service.js"
import type { IdentityProvidersBody } from "./settings.js"

/**
 * What an administrator does with the identity connections (docs/enterprise-sign-in.md,
 * "Identity-provider settings", "Trying a connection"): save both whole, probe a draft, test a draft.
 * The Management API and the console call these same functions and differ only in how they answer a
 * refusal (`ProviderRefused`: its status, a stable code, and the message naming the field).
 */
export class ProviderRefused extends Data.TaggedError("ProviderRefused")<{
  readonly status: 400 | 409 | 412 | 429
  readonly code: "invalid_request" | "managed_in_configuration" | "precondition_failed" | "too_many_requests"
  readonly message: string
  /** A 429's wait, in seconds: answered as `Retry-After`. */
  readonly retryAfter?: number
}> {}

const invalid = (message: string) => new ProviderRefused({ status: 400, code: "invalid_request", message })

/** A draft's problems rather than the connection to try. */
const isProblems = (value: object): value is ReadonlyArray<string> => Array.isArray(value)

/** The draft OIDC connection, or a refusal naming every problem: a save's rules, and complete. */
const oidcDraft = (draft: ConnectionDraftBody) =>
  Effect.gen(function* () {
    if (draft.oidc === undefined) return yield* invalid('oidc: required when source is "oidc"')
    const connection = oidcDraftConnection(draft.oidc, yield* (yield* IdentityProviders).current)
    if (isProblems(connection)) return yield* invalid(connection.join("; "))
    return connection
  })

/** The draft LDAP connection, as the OIDC one. */
const ldapDraft = (draft: ConnectionDraftBody) =>
  Effect.gen(function* () {
    if (draft.ldap === undefined) return yield* invalid('ldap: required when source is "ldap"')
    const settings = ldapDraftSettings(draft.ldap, yield* (yield* IdentityProviders).current)
    if (isProblems(settings)) return yield* invalid(settings.join("; "))
    return settings
  })

/** A probe's result (`POST …/probe`): the connection only, nothing saved. */
export const probeDraft = Effect.fn("IdentityProviders.probe")(function* (draft: ConnectionDraftBody) {
  if (draft.source === "ldap") {
    // A connection (TLS as sign-in does it) and the service account's bind, nothing else.
    const probed = yield* Effect.either(probeDirectory(yield* ldapDraft(draft)))
    return probed._tag === "Left"
      ? { source: "ldap" as const, reachable: false, reason: probed.left.reason, detail: probed.left.detail }
      : { source: "ldap" as const, reachable: true }
  }
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

/**
 * The directory's part of a sign-in as `username`, answered at once. Nothing is stored, nobody is
 * created, and the people's sign-in throttle counts nothing (the administrator is not the person); the
 * tests' own limit does: refused passwords or names per administrator, per name and over all names
 * (`ConnectionTests.startLdapTest`), past which the test is refused (429) without reaching the directory.
 */
const testLdap = (adminId: string, draft: ConnectionDraftBody) =>
  Effect.gen(function* () {
    const settings = yield* ldapDraft(draft)
    if (draft.username === undefined || draft.password === undefined) {
      return yield* invalid('username, password: required when source is "ldap"')
    }
    const slot = yield* (yield* ConnectionTests).startLdapTest(adminId, draft.username)
    if ("wait" in slot) {
      yield* securityEvent("identity_provider.test_throttled", { user_id: adminId, retry_after: slot.wait })
      return yield* new ProviderRefused({
        status: 429,
        code: "too_many_requests",
        message: `Too many directory sign-in tests were refused their password or name; try again in ${slot.wait} seconds.`,
        retryAfter: slot.wait
      })
    }
    const found = yield* Effect.either(authenticate(settings, draft.username, Redacted.make(draft.password)))
    slot.done(found._tag === "Left" ? found.left.reason : undefined)
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

/**
 * A test (`POST …/test`): LDAP answers at once; OIDC opens a one-use test owned by `adminId` and
 * answers the link that starts it (`/sso/login/test`), to be opened in a browser.
 */
export const testDraft = Effect.fn("IdentityProviders.test")(function* (adminId: string, draft: ConnectionDraftBody) {
  if (draft.source === "ldap") return yield* testLdap(adminId, draft)
  const connection = yield* oidcDraft(draft)
  const providers = yield* IdentityProviders
  const test = yield* (yield* ConnectionTests).open(adminId, (yield* providers.current).revision, connection)
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

/**
 * Replaces both connections whole, only at `revision` (what the administrator read; `0` before the
 * first save). The YAML's `auth.sso.upstream` is the OIDC connection where it is set: one source per
 * connection.
 */
export const replaceSettings = Effect.fn("IdentityProviders.replace")(function* (
  adminId: string,
  revision: number,
  body: IdentityProvidersBody,
  requestId: string | undefined
) {
  const { config } = yield* Config
  if (body.oidc.enabled && config.auth.sso.upstream !== undefined) {
    return yield* new ProviderRefused({
      status: 409,
      code: "managed_in_configuration",
      message:
        "oidc.enabled: this gateway's identity provider is set in its configuration file (auth.sso.upstream); remove it there to manage the OIDC connection here."
    })
  }
  const outcome = yield* (yield* IdentityProviders).save(adminId, revision, body, requestId)
  switch (outcome._tag) {
    case "Invalid":
      return yield* invalid(outcome.problems.join("; "))
    case "Stale":
      return yield* new ProviderRefused({
        status: 412,
        code: "precondition_failed",
        message: `The identity-provider settings changed since they were read: their revision is now "${outcome.revision}". Read them again.`
      })
    case "Saved":
      return outcome.record
  }
})
