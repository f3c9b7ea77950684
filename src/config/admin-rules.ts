import { Redacted } from "effect"
import { parseArchiveSigningKey } from "../events/archive/signing-key.js"
import { bareEndpoint, isLoopbackHost, parseListen, requireHttps, requireHttpsUnlessLoopback } from "./address.js"
import { type Rule, rule, when } from "./cross-field-rule.js"
import { problem } from "./problem.js"

/** Local mode binds loopback only: the Management API is for operators on the gateway's own host. */
export const adminListenAddress = rule("adminListenAddress", ["admin"], ({ admin }) => {
  const address = parseListen(admin.listen)
  if (address === undefined) {
    return [problem("admin.listen", "expected host:port (IPv6 as [::1]:8081) with a port from 1 to 65535")]
  }
  return admin.mode === "local" && !isLoopbackHost(address.host)
    ? [
        problem(
          "admin.listen",
          `admin.mode local binds loopback only (127.0.0.0/8, ::1 or localhost), got "${address.host}"`
        )
      ]
    : []
})

/** The browser console behind an HTTPS proxy is not built yet: say so instead of listening somewhere unsafe. */
export const remoteAdminAvailable = rule("remoteAdminAvailable", ["admin"], ({ admin }) =>
  admin.mode === "remote"
    ? [
        problem(
          "admin.mode",
          "remote administration (a browser console behind an HTTPS proxy) is not available in this version; use local: the Management API then listens on admin.listen, loopback only (docs/management-api.md)"
        )
      ]
    : []
)

export const remoteAdminConfigured = rule("remoteAdminConfigured", ["admin"], ({ admin }) => {
  if (admin.mode !== "remote") return []
  return [
    ...(admin.public_url === undefined
      ? [problem("admin.public_url", "is required when admin.mode is remote")]
      : when("admin.public_url", requireHttpsUnlessLoopback(admin.public_url))),
    ...(admin.client_id === undefined ? [problem("admin.client_id", "is required when admin.mode is remote")] : [])
  ]
})

/** With the built-in authorization server the console signs in as one of `auth.sso.clients`. */
export const adminClientRegistered = rule("adminClientRegistered", ["admin", "auth"], ({ admin, auth }) => {
  const clientId = admin.client_id
  if (admin.mode !== "remote" || auth.mode !== "builtin" || clientId === undefined) return []
  return auth.sso.clients.some((client) => client.id === clientId)
    ? []
    : [problem("admin.client_id", `no client "${clientId}" in auth.sso.clients`)]
})

export const clientAuthorizationConfigured = rule(
  "clientAuthorizationConfigured",
  ["client_authorization"],
  ({ client_authorization }) =>
    client_authorization.enabled && client_authorization.client_id === undefined
      ? [problem("client_authorization.client_id", "is required when client_authorization.enabled is true")]
      : []
)

/** Spec Limits: webhook secret at least 32 bytes; the HMAC key is the UTF-8 encoding of the text. */
export const webhookSecure = rule("webhookSecure", ["admin"], ({ admin }) => {
  const notifications = admin.approvals.notifications
  if (notifications === undefined) return []
  const base = "admin.approvals.notifications"
  return [
    ...when(`${base}.url`, requireHttps(notifications.url) ?? bareEndpoint(notifications.url)),
    ...when(
      `${base}.secret`,
      Buffer.byteLength(Redacted.value(notifications.secret), "utf8") >= 32 ? undefined : "must be at least 32 bytes"
    )
  ]
})

/** Spec Limits: "Audit signing key — 64 bytes Ed25519 private (Base64)", the seed then its own public key. */
export const auditArchiveValid = rule("auditArchiveValid", ["admin"], ({ admin }) => {
  const archive = admin.approvals.audit_archive
  if (archive === undefined) return []
  const key = parseArchiveSigningKey(Redacted.value(archive.signing_key))
  return [
    ...when("admin.approvals.audit_archive.url", requireHttps(archive.url) ?? bareEndpoint(archive.url)),
    ...when("admin.approvals.audit_archive.signing_key", typeof key === "string" ? key : undefined)
  ]
})

/**
 * Configuration review's step-up is the write approvals' (docs/tool-sources.md, "Configuration review"):
 * fresh OpenID Connect authentication with one of `approvals.step_up.acr_values`; without any, no
 * reviewer could ever approve.
 */
export const policyChangesStepUpConfigured = rule(
  "policyChangesStepUpConfigured",
  ["admin", "approvals"],
  ({ admin, approvals }) =>
    admin.approvals.policy_changes.require_step_up && approvals.step_up.acr_values.length === 0
      ? [
          problem(
            "admin.approvals.policy_changes.require_step_up",
            "needs approvals.step_up.acr_values (the assurance levels your identity provider asserts in acr)"
          )
        ]
      : []
)

/** Security reviewers sign in by browser at the built-in authorization server (`/auth/login?role=security`). */
export const policyChangesNeedBuiltin = rule("policyChangesNeedBuiltin", ["admin", "auth"], ({ admin, auth }) =>
  admin.approvals.policy_changes.enabled && auth.mode !== "builtin"
    ? [
        problem(
          "admin.approvals.policy_changes.enabled",
          "needs auth.mode: builtin: security reviewers sign in on the gateway's own pages (/auth/login?role=security)"
        )
      ]
    : []
)

export const adminRules: ReadonlyArray<Rule> = [
  adminListenAddress,
  remoteAdminAvailable,
  remoteAdminConfigured,
  adminClientRegistered,
  clientAuthorizationConfigured,
  webhookSecure,
  auditArchiveValid,
  policyChangesStepUpConfigured,
  policyChangesNeedBuiltin
]
