import { Clock, Effect, Either, Redacted } from "effect"
import { Config } from "../../config/service.js"
import type { LdapFailureReason } from "../../identity/ldap/failure.js"
import { ldapNamespace } from "../../identity/ldap/namespace.js"
import { LdapSignIn } from "../../identity/ldap/sign-in.js"
import { ldapSettingsOf } from "../../identity/providers/draft.js"
import { IdentityProviders, type StoredConnections } from "../../identity/providers/service.js"
import { isBootstrapSubject } from "../../identity/upstream/bootstrap.js"
import { PolicyWrites } from "../../policy/writes.js"
import { accountUsable } from "../account-access.js"
import type { Single } from "../authorize/params.js"
import { clientAddress } from "../client-address.js"
import { seeOther } from "../pages/html.js"
import { PendingAuthorizations } from "../pending.js"
import { authSettings } from "../settings.js"
import { afterAuthentication } from "./finish.js"
import { readPageForm } from "./form.js"
import { throttledPage } from "./local.js"
import { answerPage } from "./page-response.js"
import { page } from "./query.js"
import { stagePage } from "./sign-in.js"
import { ldapSignInEnded, ldapSignInRefused, lockoutWindowsEnded } from "./sign-in-events.js"
import { postedTransaction } from "./transaction.js"

const WRONG = "Wrong user name or password."
const UNREACHABLE = "The directory cannot be reached right now. Try again in a moment."

/**
 * What the person is told for each refusal, and with which status (docs/ldap.md, "Refusals"): never
 * which of name and password was wrong, nor what went wrong inside the directory — that is in the log.
 * `throttled` has its own page (429 with `Retry-After`).
 */
const shown = (reason: Exclude<LdapFailureReason, "throttled">): { readonly text: string; readonly status: number } => {
  switch (reason) {
    case "invalid_credentials":
    case "no_such_user":
    case "ambiguous_user":
      return { text: WRONG, status: 401 }
    case "invalid_input":
      return { text: "Enter your user name and password.", status: 400 }
    case "busy":
      return { text: "Too many people are signing in right now. Try again in a moment.", status: 503 }
    case "unreachable":
    case "tls_failed":
    case "service_bind_failed":
    case "search_failed":
      return { text: UNREACHABLE, status: 502 }
    case "invalid_settings":
    case "missing_stable_id":
    case "too_many_groups":
      return { text: "Directory sign-in is unavailable for this account. Contact your administrator.", status: 502 }
  }
}

/** Whether the stored LDAP connection is still the one a sign-in started with (settings and password). */
const sameConnection = (before: StoredConnections, after: StoredConnections) =>
  after.settings.ldap.enabled &&
  JSON.stringify(after.settings.ldap) === JSON.stringify(before.settings.ldap) &&
  after.ldapBindPassword !== undefined &&
  before.ldapBindPassword !== undefined &&
  Redacted.value(after.ldapBindPassword) === Redacted.value(before.ldapBindPassword)

/** A form field given once, else empty (which the sign-in refuses as `invalid_input`, sending nothing). */
const field = (found: Single) => (found._tag === "Value" ? found.value : "")

/**
 * `POST /sso/login/ldap` (`login`, `csrf`, `username`, `password`): the directory account form of the
 * sign-in page, when an LDAP connection is stored and enabled (docs/ldap.md). The directory checks the
 * password (`LdapSignIn`: the local sign-in's throttle, at most 16 at once); the person is found or
 * created by namespace and stable id (pending until an administrator enables them), their directory
 * groups become their `claims` memberships, and the sign-in continues as a complete one — LDAP is a
 * single factor, with no TOTP step — or ends with `access_denied`, reason `account_access_required`.
 * Every refusal writes one `auth.ldap_sign_in_refused` line.
 */
export const ldapLoginEndpoint = answerPage(
  Effect.gen(function* () {
    const settings = yield* authSettings
    const stored = yield* (yield* IdentityProviders).current
    const directory = stored.settings.ldap.enabled
      ? ldapSettingsOf(stored.settings.ldap, stored.ldapBindPassword)
      : undefined
    // An enabled connection is complete (its save was checked), so a string here cannot happen.
    if (directory === undefined || typeof directory === "string") {
      return yield* page("Not available", "Directory sign-in is not configured.", 404)
    }
    const params = yield* readPageForm
    const transaction = yield* postedTransaction(settings, params)
    if (transaction.stage !== "sign_in") return seeOther(`/sso?login=${encodeURIComponent(transaction.id)}`)
    const address = yield* clientAddress
    const who = { address, transaction, userId: undefined }
    const provider = ldapNamespace(directory)
    const outcome = yield* Effect.either(
      (yield* LdapSignIn).signIn(directory, {
        username: field(params.single("username")),
        password: Redacted.make(field(params.single("password"))),
        address
      })
    )
    if (Either.isLeft(outcome)) {
      const failure = outcome.left
      yield* ldapSignInRefused(who, provider, failure)
      if (failure.reason === "throttled") {
        return throttledPage(settings, transaction, failure.retryAfterSeconds ?? 60)
      }
      const { text, status } = shown(failure.reason)
      return stagePage(settings, transaction, text, status)
    }
    const { identity, namespace, lockoutsEnded } = outcome.right
    yield* lockoutWindowsEnded(who, lockoutsEnded)
    // The connection may have been replaced or disabled while the directory answered: its people's
    // sessions were revoked by that save, so nothing started under it completes.
    if (!sameConnection(stored, yield* (yield* IdentityProviders).current)) {
      yield* ldapSignInEnded(who, namespace, { reason: "connection_replaced" })
      yield* (yield* PendingAuthorizations).finish(transaction.id)
      return yield* page("Sign-in expired", "The directory's settings changed during this sign-in. Start again.", 400)
    }
    const { config } = yield* Config
    const user = yield* (yield* PolicyWrites).admitEnterpriseUser(
      {
        namespace,
        subject: identity.subject,
        name: identity.name,
        groups: identity.groups.map((group) => ({ externalId: group.id, name: group.name })),
        departments: [],
        // Never, as things are: bootstrap subjects belong to the configuration file's provider, and an
        // LDAP connection is only ever stored through the Management API.
        bootstrap: isBootstrapSubject(config, namespace, identity.subject)
      },
      new Date(yield* Clock.currentTimeMillis)
    )
    // Pending, disabled or directory-inactive: logged here; afterAuthentication ends the sign-in.
    if (!accountUsable(user)) {
      yield* ldapSignInEnded(who, namespace, {
        reason: "account_access_required",
        user_id: user.id,
        status: user.directory_active ? user.status : "directory_inactive"
      })
    }
    return yield* afterAuthentication(settings, transaction, user.id, "ldap")
  })
).pipe(Effect.withSpan("ldapLoginEndpoint"))
