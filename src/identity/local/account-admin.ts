import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Data, Effect, FiberRef, HashMap, Option, Redacted } from "effect"
import { sha256Hex } from "../../crypto/hashing.js"
import { Sealer } from "../../crypto/sealer.js"
import { securityEvent } from "../../events/security-log.js"
import { AccessState } from "../../policy/access-state.js"
import { commitPolicyChange } from "../../policy/commit.js"
import { keepingLocalAdministrator } from "../../policy/last-administrator.js"
import { localAccountStatus } from "../../policy/local-account-status.js"
import type { Actor } from "../../policy/writes.js"
import { AuditEventRepo } from "../../store/audit-events.js"
import { BrowserSessionRepo } from "../../store/browser-sessions.js"
import { EnrolmentLinkRepo, type EnrolmentLinkRow } from "../../store/enrolment-links.js"
import { LocalCredentialRepo, totpSealContext } from "../../store/local-credentials.js"
import { PolicyVersionRepo } from "../../store/policy-version.js"
import { SessionRepo } from "../../store/sessions.js"
import { UserRepo, type UserRow, type UserStatus } from "../../store/users.js"
import { hashPassword } from "./password.js"
import { generateTotpSecret, matchTotp } from "./totp.js"
import { displayNameProblem, usernameProblem } from "./usernames.js"

/** How long an enrolment link works (docs/local-accounts.md, "The enrolment link"). */
export const ENROLMENT_LINK_TTL_MS = 24 * 60 * 60 * 1000
/** Random bytes of a link's token (base64url in the link); only their SHA-256 hash is stored. */
const TOKEN_BYTES = 32
/** Tokens are 43 base64url characters; anything else is refused before hashing. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/

/** Why an administrator's change to a local account was refused (docs/management-api.md, "Errors"). */
export type LocalAccountRefusalCode =
  | "invalid_request"
  | "not_found"
  | "precondition_failed"
  | "name_taken"
  | "builtin_administrator"
  | "account_disabled"
  | "last_administrator"

/** The HTTP status of each refusal, for the Management API and the console alike. */
export const localAccountRefusalStatus: Record<LocalAccountRefusalCode, 400 | 404 | 409 | 412> = {
  invalid_request: 400,
  builtin_administrator: 400,
  not_found: 404,
  name_taken: 409,
  account_disabled: 409,
  last_administrator: 409,
  precondition_failed: 412
}

export class LocalAccountRefused extends Data.TaggedError("LocalAccountRefused")<{
  readonly code: LocalAccountRefusalCode
  readonly description: string
}> {}

const refuse = (code: LocalAccountRefusalCode, description: string) => new LocalAccountRefused({ code, description })

/** Why a redemption of an enrolment link did not enrol (the page says it in its own words). */
export type EnrolmentFailure = "link_dead" | "wrong_code" | "form_stale"

/** A local account as administrators see it: the user row and its live enrolment link, if any. */
export interface LocalAccount {
  readonly user: UserRow
  readonly link: EnrolmentLinkRow | undefined
}

/** A new enrolment link: its token is shown once (in the link) and never stored. */
export interface IssuedLink {
  readonly account: LocalAccount
  readonly token: Redacted.Redacted<string>
  readonly expiresAt: Date
}

/** The link's address on the public listener; the token is its only secret (docs/local-accounts.md). */
export const enrolmentUrl = (publicOrigin: string, token: Redacted.Redacted<string>) =>
  `${publicOrigin}/sso/enrol?token=${Redacted.value(token)}`

/** The hash a token is stored and looked up by; undefined for text that is no token at all. */
export const enrolmentTokenHash = (token: string): string | undefined =>
  TOKEN_PATTERN.test(token) ? sha256Hex(token) : undefined

/** The sealing context of a TOTP secret offered on an enrolment page: bound to that one link. */
const offeredSecretContext = (tokenHash: string) => `enrolment_totp:${tokenHash}`

const requestIdOf = Effect.map(FiberRef.get(FiberRef.currentLogAnnotations), (annotations) => {
  const id = Option.getOrUndefined(HashMap.get(annotations, "request_id"))
  return typeof id === "string" ? id : undefined
})

/**
 * Local accounts people are given (docs/local-accounts.md), for administrators: list, show, create
 * (with a one-time enrolment link), disable, enable, reset password and reset second factor; and the
 * enrolment itself, where the person sets a password and a TOTP authenticator through the link.
 *
 * Every change runs in one transaction that bumps `policy_version`, applies only if the account's
 * revision is still the one the administrator read (`If-Match`), and records an audit event; after
 * the commit the in-memory policy drops the user and one security log line is written. The built-in
 * administrator is not managed here (`gateway init-admin --reset` recovers it).
 *
 * A reset (password or second factor) is a re-enrolment: both factors are removed, the account waits
 * for enrolment and the new link sets both. Someone holding only the old password can never enrol an
 * authenticator of their own, and a link never combines with a factor someone else may still hold.
 */
export class LocalAccountAdmin extends Effect.Service<LocalAccountAdmin>()("gateway/LocalAccountAdmin", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const users = yield* UserRepo
    const links = yield* EnrolmentLinkRepo
    const credentials = yield* LocalCredentialRepo
    const sessions = yield* SessionRepo
    const browserSessions = yield* BrowserSessionRepo
    const versions = yield* PolicyVersionRepo
    const audit = yield* AuditEventRepo
    const state = yield* AccessState
    const sealer = yield* Sealer
    const accountStatus = localAccountStatus({ links, credentials, sessions, browserSessions })

    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /** Runs `work` in one transaction after bumping the policy version; then tells the policy and the log. */
    const transaction = <A>(
      userId: (value: A) => string,
      event: (value: A) => { readonly name: string; readonly fields: Record<string, unknown> },
      work: Effect.Effect<A, LocalAccountRefused, SqlClient.SqlClient>
    ) =>
      Effect.gen(function* () {
        const value = yield* commitPolicyChange(work, (done) => ({ users: [userId(done)] })).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.provideService(PolicyVersionRepo, versions),
          Effect.provideService(AccessState, state)
        )
        const line = event(value)
        yield* securityEvent(line.name, line.fields)
        return value
      })

    const record = (actor: Actor | undefined, action: string, id: string, detail: Record<string, unknown>) =>
      Effect.gen(function* () {
        yield* audit.insert({
          at: yield* now,
          actorId: actor?.userId,
          action,
          targetKind: "user",
          targetId: id,
          detail,
          requestId: yield* requestIdOf
        })
        return { name: action, fields: { actor: actor?.userId ?? null, target_kind: "user", target_id: id, ...detail } }
      })

    /** The local account `id`: refused for the built-in administrator and for anyone else who is no local account. */
    const localAccount = (id: string) =>
      Effect.gen(function* () {
        const found = yield* users.findById(id)
        if (Option.isNone(found) || found.value.kind === "enterprise") {
          return yield* refuse("not_found", `No local account "${id}".`)
        }
        if (found.value.kind === "builtin_admin") {
          return yield* refuse(
            "builtin_administrator",
            "This is the built-in administrator: it is not managed here. Recover it with `gateway init-admin --reset` (or --reset-mfa) on the gateway's host."
          )
        }
        return found.value
      })

    const withLink = (user: UserRow) =>
      Effect.map(links.forUser(user.id), (link): LocalAccount => ({ user, link: Option.getOrUndefined(link) }))

    const stale = (current: number) =>
      refuse(
        "precondition_failed",
        `The local account changed since it was read: its revision is now "${current}". Read it again.`
      )

    /** A fresh link for `userId`, replacing any older one. */
    const issueLink = (userId: string) =>
      Effect.gen(function* () {
        const token = randomBytes(TOKEN_BYTES).toString("base64url")
        const at = yield* now
        const expiresAt = new Date(at.getTime() + ENROLMENT_LINK_TTL_MS)
        yield* links.replace(userId, sha256Hex(token), at, expiresAt)
        return { token: Redacted.make(token), expiresAt }
      })

    /** Up to `limit` local accounts after `cursor` (an id; `""` from the start), with their links. */
    const list = Effect.fn("LocalAccountAdmin.list")(function* (cursor: string, limit: number) {
      const page = yield* users.pageLocal(cursor, limit + 1)
      const shown = page.slice(0, limit)
      const byUser = new Map((yield* links.forUsers(shown.map((user) => user.id))).map((row) => [row.user_id, row]))
      return {
        accounts: shown.map((user): LocalAccount => ({ user, link: byUser.get(user.id) })),
        nextCursor: page.length > limit ? shown.at(-1)!.id : undefined
      }
    })

    const show = Effect.fn("LocalAccountAdmin.show")(function* (id: string) {
      return yield* withLink(yield* localAccount(id))
    })

    const create = Effect.fn("LocalAccountAdmin.create")(function* (
      actor: Actor,
      input: { readonly username: string; readonly displayName: string }
    ) {
      const nameProblem = usernameProblem(input.username)
      if (nameProblem !== undefined) return yield* refuse("invalid_request", `username: ${nameProblem}`)
      const displayProblem = displayNameProblem(input.displayName)
      if (displayProblem !== undefined) return yield* refuse("invalid_request", `display_name: ${displayProblem}`)
      const username = input.username.normalize("NFC")
      const displayName = input.displayName.normalize("NFC")
      let line: { readonly name: string; readonly fields: Record<string, unknown> } | undefined
      return yield* transaction(
        (issued: IssuedLink) => issued.account.user.id,
        () => line!,
        Effect.gen(function* () {
          const existing = yield* users.findLocalByUsername(username)
          if (Option.isSome(existing)) return yield* nameTaken(username, existing.value.username ?? "")
          const similar = yield* users.findLocalLookingLike(username)
          if (similar !== undefined) {
            return yield* refuse(
              "name_taken",
              `"${username}" looks like the local account "${similar}" (characters that can be mistaken for one another, such as "0" and "O", "rn" and "m", or Cyrillic "а" and Latin "a", are compared as one); choose a name that reads differently.`
            )
          }
          const at = yield* now
          const id = yield* users.insertLocalIfFree({ kind: "local", username, displayName, at, status: "pending" })
          if (id === undefined) return yield* nameTaken(username, username)
          const link = yield* issueLink(id)
          const user = Option.getOrThrow(yield* users.findById(id))
          line = yield* record(actor, "identity.local_account_created", id, {
            username,
            display_name: displayName,
            status: "pending",
            enrolment_expires_at: link.expiresAt.toISOString(),
            revision: user.revision
          })
          return { account: yield* withLink(user), ...link }
        })
      )
    })

    const nameTaken = (username: string, existing: string) =>
      refuse(
        "name_taken",
        existing === username
          ? `A local account named "${username}" already exists.`
          : `A local account named "${existing}" already exists; "${username}" reads the same (names are compared ignoring case and Unicode normalization).`
      )

    /**
     * A change to account `id` at revision `expected`: `apply` runs after the conditional write of the
     * new status, in the same transaction.
     */
    const change = <A>(
      actor: Actor,
      id: string,
      expected: number,
      action: string,
      next: (user: UserRow) => Effect.Effect<UserStatus, LocalAccountRefused>,
      apply: (user: UserRow, at: Date) => Effect.Effect<A & { readonly detail: Record<string, unknown> }>
    ) =>
      Effect.gen(function* () {
        let line: { readonly name: string; readonly fields: Record<string, unknown> } | undefined
        const value = yield* transaction(
          () => id,
          () => line!,
          Effect.gen(function* () {
            const user = yield* localAccount(id)
            if (user.revision !== expected) return yield* stale(user.revision)
            const status = yield* next(user)
            const at = yield* now
            // Disabling or resetting an administrator must leave a local administrator (docs/management-api.md).
            const written = yield* keepingLocalAdministrator(users.updateIfRevision(id, expected, { status }, at)).pipe(
              Effect.catchTag("PolicyRefused", (refused) =>
                Effect.fail(refuse("last_administrator", refused.description))
              )
            )
            if (written._tag !== "Written") return yield* stale(user.revision)
            const result = yield* apply(user, at)
            line = yield* record(actor, action, id, {
              ...(status === user.status ? {} : { status: { before: user.status, after: status } }),
              ...result.detail,
              revision: written.revision
            })
            return result
          })
        )
        return value
      })

    const disable = Effect.fn("LocalAccountAdmin.disable")(function* (actor: Actor, id: string, expected: number) {
      yield* change(
        actor,
        id,
        expected,
        "identity.local_account_disabled",
        () => Effect.succeed<UserStatus>("disabled"),
        (user, at) =>
          Effect.map(accountStatus.afterDisable(user, at), (revoked) => ({ detail: { sessions_revoked: revoked } }))
      )
      return yield* show(id)
    })

    const enable = Effect.fn("LocalAccountAdmin.enable")(function* (actor: Actor, id: string, expected: number) {
      yield* change(
        actor,
        id,
        expected,
        "identity.local_account_enabled",
        // An account that never finished its enrolment waits for it again (a reset gives a new link).
        accountStatus.statusOnEnable,
        () => Effect.succeed({ detail: {} })
      )
      return yield* show(id)
    })

    const reset = (kind: "password" | "mfa") =>
      Effect.fn(`LocalAccountAdmin.reset_${kind}`)(function* (actor: Actor, id: string, expected: number) {
        const issued = yield* change(
          actor,
          id,
          expected,
          kind === "password" ? "identity.local_account_password_reset" : "identity.local_account_mfa_reset",
          (user) =>
            user.status === "disabled"
              ? Effect.fail(
                  refuse(
                    "account_disabled",
                    "The local account is disabled: enable it first, then reset it (a disabled account's links do not work)."
                  )
                )
              : Effect.succeed<UserStatus>("pending"),
          (_user, at) =>
            Effect.gen(function* () {
              yield* credentials.remove(id)
              const link = yield* issueLink(id)
              const revoked = yield* accountStatus.endSessions(id, "credentials_reset", at)
              return {
                ...link,
                detail: { sessions_revoked: revoked, enrolment_expires_at: link.expiresAt.toISOString() }
              }
            })
        )
        return { account: yield* show(id), token: issued.token, expiresAt: issued.expiresAt } satisfies IssuedLink
      })

    // --- The enrolment, by the person holding the link ---

    /** The account a link is for while it works (unused, unexpired, the account waiting for enrolment). */
    const openLink = Effect.fn("LocalAccountAdmin.openLink")(function* (token: Redacted.Redacted<string>) {
      const hash = enrolmentTokenHash(Redacted.value(token))
      if (hash === undefined) return Option.none<UserRow>()
      const link = yield* links.findLive(hash, yield* now)
      if (Option.isNone(link)) return Option.none<UserRow>()
      const user = yield* users.findById(link.value.user_id)
      return Option.filter(user, (row) => row.kind === "local" && row.status !== "disabled")
    })

    /**
     * A TOTP secret to offer on the link's page, and its sealed form for the page's hidden field: sealed
     * under this link, so it cannot be carried to another link's form or altered.
     */
    const offerSecret = (token: Redacted.Redacted<string>) => {
      const secret = generateTotpSecret()
      const hash = sha256Hex(Redacted.value(token))
      return { secret, sealed: sealer.seal(secret, offeredSecretContext(hash)) }
    }

    /**
     * Uses the link up: sets the password and the offered TOTP secret once `code` proves the person's app
     * holds it, and enables the account for sign-in. The link is consumed by one conditional DELETE in
     * the transaction that sets the factors, so of two concurrent redemptions exactly one enrols.
     */
    const enrol = Effect.fn("LocalAccountAdmin.enrol")(function* (input: {
      readonly token: Redacted.Redacted<string>
      readonly password: Redacted.Redacted<string>
      readonly sealedSecret: string
      readonly code: string
    }) {
      const hash = enrolmentTokenHash(Redacted.value(input.token))
      if (hash === undefined) return { _tag: "Failed", reason: "link_dead" } as const
      const secret = yield* Effect.option(sealer.open(input.sealedSecret, offeredSecretContext(hash)))
      if (Option.isNone(secret)) return { _tag: "Failed", reason: "form_stale" } as const
      const step = matchTotp(secret.value, input.code, yield* Clock.currentTimeMillis, undefined)
      if (step === undefined) return { _tag: "Failed", reason: "wrong_code" } as const
      const passwordHash = yield* hashPassword(input.password)
      const outcome = yield* transaction(
        (user: UserRow) => user.id,
        (user) => ({ name: "identity.local_account_enrolled", fields: { user_id: user.id, username: user.username } }),
        Effect.gen(function* () {
          const at = yield* now
          const userId = yield* links.redeem(hash, at)
          const user = userId === undefined ? Option.none<UserRow>() : yield* users.findById(userId)
          if (Option.isNone(user) || user.value.kind !== "local" || user.value.status === "disabled") {
            return yield* refuse("not_found", "link_dead")
          }
          const sealed = sealer.seal(secret.value, totpSealContext(user.value.id))
          yield* credentials.setFactors(user.value.id, { passwordHash, sealedSecret: sealed, acceptedStep: step }, at)
          yield* users.setStatus(user.value.id, "enabled", at)
          yield* audit.insert({
            at,
            actorId: user.value.id,
            action: "identity.local_account_enrolled",
            targetKind: "user",
            targetId: user.value.id,
            detail: { status: { before: user.value.status, after: "enabled" }, revision: user.value.revision + 1 },
            requestId: yield* requestIdOf
          })
          return user.value
        })
      ).pipe(Effect.either)
      secret.value.fill(0)
      return outcome._tag === "Left"
        ? ({ _tag: "Failed", reason: "link_dead" } as const)
        : ({ _tag: "Enrolled", user: outcome.right } as const)
    })

    return {
      list,
      show,
      create,
      disable,
      enable,
      resetPassword: reset("password"),
      resetMfa: reset("mfa"),
      openLink,
      offerSecret,
      enrol
    } as const
  })
}) {}
