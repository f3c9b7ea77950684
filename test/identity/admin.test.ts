/**
 * `gateway init-admin` (docs/authorization-server.md, "The built-in administrator") — the built-in local
 * administrator is created once and recovered with `--reset` (new password) and `--reset-mfa` (second
 * factor cleared), with the same key and database.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import { authRepositories } from "../../src/auth/layer.js"
import { Sealer } from "../../src/crypto/sealer.js"
import { LocalAccounts } from "../../src/identity/local/accounts.js"
import { ADMIN_USERNAME, initAdmin } from "../../src/identity/local/admin.js"
import { generateTotpSecret, totpAt } from "../../src/identity/local/totp.js"
import { policyRepositories } from "../../src/runtime/base.js"
import { AuditEventRepo } from "../../src/store/audit-events.js"
import { LocalCredentialRepo } from "../../src/store/local-credentials.js"
import { SessionRepo } from "../../src/store/sessions.js"
import { UserRepo } from "../../src/store/users.js"
import { storeKinds, testStoreLayer } from "../support/databases.js"

const layerFor = (kind: (typeof storeKinds)[number]) =>
  LocalAccounts.Default.pipe(
    Layer.provideMerge(Layer.mergeAll(authRepositories, policyRepositories)),
    Layer.provideMerge(testStoreLayer(kind))
  )

const password = (text: string) => Redacted.make(text)
const create = (text?: string) =>
  initAdmin({
    reset: false,
    resetPassword: true,
    resetMfa: false,
    password: text === undefined ? undefined : password(text)
  })
const checks = (text: string) =>
  Effect.flatMap(LocalAccounts, (accounts) => accounts.checkPassword(ADMIN_USERNAME, password(text))).pipe(
    Effect.map(Option.isSome)
  )

describe.each(storeKinds)("init-admin (%s)", (kind) => {
  it.scoped("creates the administrator once, with a generated password shown once and stored hashed", () =>
    Effect.gen(function* () {
      const created = yield* create()
      expect(created.created).toBe(true)
      const generated = Redacted.value(created.generatedPassword ?? Redacted.make(""))
      expect(generated).toMatch(/^[A-Za-z0-9_-]{24}$/)
      expect(yield* checks(generated)).toBe(true)
      const admin = Option.getOrThrow(yield* (yield* UserRepo).findBuiltinAdmin)
      expect(admin).toMatchObject({ kind: "builtin_admin", username: "admin", status: "enabled" })
      const stored = Option.getOrThrow(yield* (yield* LocalCredentialRepo).find(admin.id))
      expect(stored.password_hash).not.toContain(generated)
      expect(stored.totp_secret_sealed).toBeNull()

      const again = yield* Effect.flip(create())
      expect(again.message).toContain("already exists")
      const short = yield* Effect.flip(
        initAdmin({ reset: true, resetPassword: true, resetMfa: false, password: password("too short") })
      )
      expect(short.message).toContain("at least 12 characters")
    }).pipe(Effect.provide(layerFor(kind)))
  )

  it.scoped("--reset sets a new password, enables the account and revokes its sessions; --reset-mfa clears TOTP", () =>
    Effect.gen(function* () {
      expect(
        (yield* Effect.flip(initAdmin({ reset: true, resetPassword: true, resetMfa: false, password: undefined })))
          .message
      ).toContain("no built-in administrator")
      yield* create("first password 123")
      const users = yield* UserRepo
      const admin = Option.getOrThrow(yield* users.findBuiltinAdmin)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* users.setStatus(admin.id, "disabled", now)
      const sessionId = randomBytes(8).toString("hex")
      yield* (yield* SessionRepo).insert({
        id: sessionId,
        userId: admin.id,
        clientId: "cli",
        scope: "",
        resource: "https://gw.example.com/mcp",
        authTime: now,
        createdAt: now,
        expiresAt: new Date(now.getTime() + 3600_000)
      })
      const secret = generateTotpSecret()
      expect(yield* (yield* LocalAccounts).confirmEnrollment(admin.id, secret, totpAt(secret, now.getTime()))).toBe(
        true
      )
      const sealed = Option.getOrThrow(yield* (yield* LocalCredentialRepo).find(admin.id)).totp_secret_sealed ?? ""
      expect(sealed).toMatch(/^v1\./)
      expect(Buffer.from(yield* (yield* Sealer).open(sealed, `local_totp:${admin.id}`))).toEqual(Buffer.from(secret))

      const reset = yield* initAdmin({
        reset: true,
        resetPassword: true,
        resetMfa: false,
        password: password("second password 456")
      })
      expect(reset).toMatchObject({ created: false, revokedSessions: 1, generatedPassword: undefined })
      expect(yield* checks("first password 123")).toBe(false)
      expect(yield* checks("second password 456")).toBe(true)
      expect(Option.getOrThrow(yield* users.findBuiltinAdmin).status).toBe("enabled")
      expect(Option.getOrThrow(yield* (yield* SessionRepo).find(sessionId)).revoked_reason).toBe("administrator_reset")
      // The second factor survives a password reset…
      expect(Option.getOrThrow(yield* (yield* LocalCredentialRepo).find(admin.id)).totp_secret_sealed).toBe(sealed)

      // …and only --reset-mfa clears it, keeping the password.
      const mfa = yield* initAdmin({ reset: true, resetPassword: false, resetMfa: true, password: undefined })
      expect(mfa.generatedPassword).toBeUndefined()
      expect(Option.getOrThrow(yield* (yield* LocalCredentialRepo).find(admin.id)).totp_secret_sealed).toBeNull()
      expect(yield* checks("second password 456")).toBe(true)

      // Each recovery is in the audit trail (the running gateway's log never sees this command's line).
      const trail = (yield* (yield* AuditEventRepo).forTarget(admin.id)).filter((row) =>
        row.action.startsWith("identity.administrator_")
      )
      expect(trail.map((row) => [row.action, row.actor_id, JSON.parse(String(row.detail))])).toEqual([
        ["identity.administrator_created", null, { by: "gateway init-admin" }],
        [
          "identity.administrator_reset",
          null,
          { password_reset: true, mfa_reset: false, sessions_revoked: 1, by: "gateway init-admin" }
        ],
        [
          "identity.administrator_reset",
          null,
          { password_reset: false, mfa_reset: true, sessions_revoked: 0, by: "gateway init-admin" }
        ]
      ])
    }).pipe(Effect.provide(layerFor(kind)))
  )
})
