import { Redacted } from "effect"
import { adminResource, consoleRedirectUri } from "../admin/resource.js"
import { parseArchiveSigningKey } from "../events/archive/signing-key.js"
import { APPROVER_SCOPE, SECURITY_SCOPE } from "../policy/roles.js"
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

/**
 * `admin.mode: remote` (docs/management-api.md, "Where it listens"): the admin listener sits behind an
 * HTTPS proxy that answers at `admin.public_url`, whose origin is the admin resource; the console and
 * the API are served at its root, so it is an origin: no path, query, fragment or credentials.
 */
export const remoteAdminConfigured = rule("remoteAdminConfigured", ["admin"], ({ admin }) => {
  if (admin.mode !== "remote") return []
  const url = admin.public_url === undefined ? null : URL.parse(admin.public_url)
  const path =
    url !== null && url.pathname !== "/"
      ? "must be an origin (https://admin.example.com): the console and the Management API are served at its root"
      : undefined
  return [
    ...(admin.public_url === undefined
      ? [problem("admin.public_url", "is required when admin.mode is remote")]
      : when(
          "admin.public_url",
          requireHttpsUnlessLoopback(admin.public_url) ?? bareEndpoint(admin.public_url) ?? path
        )),
    ...(admin.client_id === undefined ? [problem("admin.client_id", "is required when admin.mode is remote")] : [])
  ]
})

/** A remote administrator signs in through the gateway's own authorization server, as its built-in administrator first. */
export const remoteAdminNeedsBuiltin = rule("remoteAdminNeedsBuiltin", ["admin", "auth"], ({ admin, auth }) =>
  admin.mode === "remote" && auth.mode !== "builtin"
    ? [
        problem(
          "admin.mode",
          "remote needs auth.mode: builtin: the console signs administrators in at the gateway's own authorization server"
        )
      ]
    : []
)

/**
 * The console (docs/console.md) signs in as `admin.client_id`, one of `auth.sso.clients`, whose
 * redirect URIs hold `{admin origin}/console/callback` and whose resources hold the admin resource. In
 * `local` mode the client is optional (it turns the console on, at the loopback listener); when named,
 * it must fit the same way.
 */
export const adminClientRegistered = rule("adminClientRegistered", ["admin", "auth"], ({ admin, auth }) => {
  const clientId = admin.client_id
  if (auth.mode !== "builtin" || clientId === undefined) return []
  const registered = auth.sso.clients.find((client) => client.id === clientId)
  if (registered === undefined) return [problem("admin.client_id", `no client "${clientId}" in auth.sso.clients`)]
  // The rule runs before the admin origin is known to be valid: an unparseable public_url is reported above.
  if (admin.mode === "remote" && (admin.public_url === undefined || URL.parse(admin.public_url) === null)) return []
  const redirect = consoleRedirectUri({ admin })
  const resource = adminResource({ admin })
  return [
    ...(registered.redirect_uris.includes(redirect)
      ? []
      : [problem("admin.client_id", `client "${clientId}" must list the console's redirect URI ${redirect}`)]),
    ...(registered.resources.includes(resource)
      ? []
      : [problem("admin.client_id", `client "${clientId}" must list the admin resource ${resource} in resources`)])
  ]
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

/**
 * Each role's scopes are its own (docs/access-policy.md, "Roles"): roles map to administrative scopes,
 * so a scope two roles share would give one role's holders the other's power without anyone granting
 * it — `gateway:admin` among the security reviewer's scopes makes every administrator a reviewer of
 * their own colleagues' changes (no second person), and the reverse makes every reviewer an
 * administrator. Refused at load, not discovered in an audit.
 */
export const roleScopesApart = rule("roleScopesApart", ["admin"], ({ admin }) => {
  const security = admin.approvals.policy_changes.required_scopes
  const roles: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
    ["admin", "admin.required_scopes", admin.required_scopes],
    ["approver", "gateway:approve (fixed)", [APPROVER_SCOPE]],
    [
      "security_reviewer",
      "admin.approvals.policy_changes.required_scopes",
      security.length > 0 ? security : [SECURITY_SCOPE]
    ]
  ]
  const problems: Array<ReturnType<typeof problem>> = []
  for (const [at, [role, , scopes]] of roles.entries()) {
    for (const [otherRole, otherField, otherScopes] of roles.slice(at + 1)) {
      const shared = scopes.filter((scope) => otherScopes.includes(scope))
      if (shared.length === 0) continue
      const field = otherRole === "approver" ? roles[at]![1] : otherField
      problems.push(
        problem(
          field,
          `${shared.map((scope) => `"${scope}"`).join(", ")} is a scope of both the ${role} and the ${otherRole} role: ` +
            "each role's scopes must be its own, or holding one role would grant the other"
        )
      )
    }
  }
  return problems
})

export const adminRules: ReadonlyArray<Rule> = [
  adminListenAddress,
  remoteAdminConfigured,
  remoteAdminNeedsBuiltin,
  adminClientRegistered,
  clientAuthorizationConfigured,
  webhookSecure,
  auditArchiveValid,
  policyChangesStepUpConfigured,
  policyChangesNeedBuiltin,
  roleScopesApart
]
