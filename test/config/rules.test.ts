import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"
import * as admin from "../../src/config/admin-rules.js"
import * as auth from "../../src/config/auth-rules.js"
import * as backends from "../../src/config/backend-rules.js"
import type { Rule } from "../../src/config/cross-field-rule.js"
import { allRules, checkRules } from "../../src/config/rules.js"
import * as server from "../../src/config/server-rules.js"
import type { ResolvedSecrets } from "../../src/config/service.js"
import { configOf, noSecrets, signingKey64 } from "../fixtures/config/base.js"

const run = (rule: Rule, patch: Record<string, unknown> = {}, secrets: ResolvedSecrets = noSecrets) =>
  rule.check(configOf(patch), secrets).map(({ path, message }) => `${path}: ${message}`)

const upstream = { protocol: "oidc", issuer: "https://idp.example.com", client_id: "gw", client_secret_env: "S" }
const oauth2 = {
  ...upstream,
  protocol: "oauth2",
  authorization_url: "https://idp.example.com/authorize",
  token_url: "https://idp.example.com/token",
  userinfo_url: "https://idp.example.com/userinfo",
  subject_claim: "data.id"
}
const client = (id: string) => ({
  id,
  redirect_uris: ["http://127.0.0.1/cb"],
  resources: ["https://gw.example.com/mcp"]
})
const backend = (fields: Record<string, unknown>) => ({ id: "a", url: "https://a.example.com/mcp", ...fields })

describe("cross-field rules (docs/configuration.md)", () => {
  it("the base configuration passes every rule", () => {
    expect(checkRules(configOf(), noSecrets)).toEqual([])
    expect(new Set(allRules.map((rule) => rule.name)).size).toBe(allRules.length)
  })

  it("auth.sso.clients redirect URIs: no fragment, no wildcard, http only on loopback", () => {
    const withUris = (uris: ReadonlyArray<string>) => ({
      auth: { sso: { clients: [{ ...client("a"), redirect_uris: uris }] } }
    })
    expect(run(auth.ssoRedirectUrisValid, withUris(["http://127.0.0.1/cb", "https://app.example.com/cb"]))).toEqual([])
    expect(
      run(
        auth.ssoRedirectUrisValid,
        withUris(["https://app.example.com/cb#x", "https://*.example.com/cb", "http://app.example.com/cb"])
      )
    ).toEqual([
      "auth.sso.clients[0].redirect_uris[0]: must not contain a fragment",
      "auth.sso.clients[0].redirect_uris[1]: must not contain wildcards",
      "auth.sso.clients[0].redirect_uris[2]: must use https (plain http is allowed only on a loopback host)"
    ])
  })

  it("auth.sso.clients resources are the gateway's own: server.public_url or the Management API's resource", () => {
    const withResources = (resources: ReadonlyArray<string>, extra: Record<string, unknown> = {}) => ({
      auth: { sso: { clients: [{ ...client("a"), resources }] } },
      ...extra
    })
    expect(
      run(auth.ssoClientResourcesKnown, withResources(["https://gw.example.com/mcp", "http://127.0.0.1:8081"]))
    ).toEqual([])
    // Among every rule, as the gateway checks a file.
    expect(
      checkRules(configOf(withResources(["https://gw.example.com:9443/mcp"])), noSecrets).map((each) => each.path)
    ).toEqual(["auth.sso.clients[0].resources[0]"])
    // The port changed in server.public_url and not in the client: the token could never be used.
    expect(
      run(
        auth.ssoClientResourcesKnown,
        withResources(["https://gw.example.com/mcp", "https://gw.example.com:9443/mcp"])
      )
    ).toEqual([
      'auth.sso.clients[0].resources[1]: "https://gw.example.com:9443/mcp" is not a resource of this gateway: use server.public_url "https://gw.example.com/mcp" or the admin resource "http://127.0.0.1:8081" (admin.listen)'
    ])
    expect(
      run(
        auth.ssoClientResourcesKnown,
        withResources(["http://127.0.0.1:9081"], { admin: { listen: "127.0.0.1:9081" } })
      )
    ).toEqual([])
    // An external issuer: the clients are not this gateway's to check.
    expect(
      run(auth.ssoClientResourcesKnown, {
        auth: {
          mode: "external",
          external: { jwks_url: "https://idp.example.com/jwks" },
          sso: { clients: [{ ...client("a"), resources: ["https://elsewhere.example.com"] }] }
        }
      })
    ).toEqual([])
  })

  it("client_authorization.client_id names one of auth.sso.clients in builtin mode", () => {
    const patch = (id: string) => ({
      auth: { sso: { clients: [client("portal")] } },
      client_authorization: { enabled: true, client_id: id }
    })
    expect(run(auth.clientAuthorizationClientRegistered, patch("portal"))).toEqual([])
    expect(run(auth.clientAuthorizationClientRegistered, patch("other"))).toEqual([
      'client_authorization.client_id: no client "other" in auth.sso.clients'
    ])
  })

  it("builtin mode: auth.issuer is the public origin plus /sso, exactly", () => {
    expect(run(auth.issuerMatchesPublicUrl, { auth: { issuer: "https://gw.example.com/sso/" } })).toEqual([
      'auth.issuer: must be "https://gw.example.com/sso" (origin of server.public_url + /sso)'
    ])
    expect(run(auth.issuerMatchesPublicUrl, { auth: { issuer: "https://other.example.com/sso" } })).toHaveLength(1)
    expect(run(auth.issuerMatchesPublicUrl, { auth: { mode: "external", issuer: "https://idp.example.com" } })).toEqual(
      []
    )
  })

  it("external mode requires auth.external with an https JWKS URL", () => {
    expect(run(auth.externalModeConfigured, { auth: { mode: "external" } })).toEqual([
      "auth.external: is required when auth.mode is external"
    ])
    expect(
      run(auth.externalModeConfigured, {
        auth: { mode: "external", external: { jwks_url: "http://idp.example.com/jwks" } }
      })
    ).toEqual(["auth.external.jwks_url: must use https (got http)"])
  })

  it("tenant_claim and tenant_value come together (and success_claim/success_value)", () => {
    expect(
      run(auth.upstreamClaimsPaired, { auth: { sso: { upstream: { ...upstream, tenant_claim: "tid" } } } })
    ).toEqual(["auth.sso.upstream.tenant_value: tenant_claim and tenant_value must be set together"])
    expect(
      run(auth.upstreamClaimsPaired, { auth: { sso: { upstream: { ...upstream, success_value: "0" } } } })
    ).toEqual(["auth.sso.upstream.success_claim: success_claim and success_value must be set together"])
    expect(
      run(auth.upstreamClaimsPaired, {
        auth: { sso: { upstream: { ...upstream, tenant_claim: "tid", tenant_value: "x" } } }
      })
    ).toEqual([])
  })

  it("protocol oauth2 requires its endpoints and subject_claim", () => {
    expect(run(auth.oauth2UpstreamComplete, { auth: { sso: { upstream: oauth2 } } })).toEqual([])
    expect(
      run(auth.oauth2UpstreamComplete, { auth: { sso: { upstream: { ...upstream, protocol: "oauth2" } } } })
    ).toEqual([
      "auth.sso.upstream.authorization_url: is required when protocol is oauth2",
      "auth.sso.upstream.token_url: is required when protocol is oauth2",
      "auth.sso.upstream.userinfo_url: is required when protocol is oauth2",
      "auth.sso.upstream.subject_claim: is required when protocol is oauth2"
    ])
  })

  it("upstream issuer and endpoints use https", () => {
    const insecure = { ...oauth2, issuer: "http://idp.example.com", token_url: "http://idp.example.com/token" }
    expect(run(auth.upstreamSecure, { auth: { sso: { upstream: insecure } } })).toEqual([
      "auth.sso.upstream.issuer: must use https (got http)",
      "auth.sso.upstream.token_url: must use https (got http)"
    ])
  })

  it("downstream client ids are unique", () => {
    expect(
      run(auth.ssoClientIdsUnique, { auth: { sso: { clients: [client("a"), client("b"), client("a")] } } })
    ).toEqual(['auth.sso.clients[2].id: duplicate client id "a"'])
  })

  it("the directory secret is at least 32 characters", () => {
    const secrets = (value: string) => ({ ...noSecrets, directoryToken: Redacted.make(value) })
    expect(run(auth.directorySecretLength, {}, secrets("x".repeat(31)))).toEqual([
      "auth.sso.directory_token_env: the directory secret in this variable must be at least 32 characters"
    ])
    expect(run(auth.directorySecretLength, {}, secrets("x".repeat(32)))).toEqual([])
  })

  it("the webhook secret is at least 32 bytes of UTF-8 and its URL https without credentials, query or fragment", () => {
    const notifications = (url: string, secret: string) => ({
      admin: { approvals: { notifications: { url, secret } } }
    })
    expect(run(admin.webhookSecure, notifications("https://hooks.example.com/x", "é".repeat(16)))).toEqual([])
    expect(run(admin.webhookSecure, notifications("https://hooks.example.com/x", "x".repeat(31)))).toEqual([
      "admin.approvals.notifications.secret: must be at least 32 bytes"
    ])
    for (const [url, message] of [
      ["http://hooks.example.com/x", "must use https (got http)"],
      ["https://u:p@hooks.example.com/x", "must not contain credentials"],
      ["https://hooks.example.com/x?token=1", "must not contain a query"],
      ["https://hooks.example.com/x#f", "must not contain a fragment"]
    ] as const) {
      expect(run(admin.webhookSecure, notifications(url, "x".repeat(32)))).toEqual([
        `admin.approvals.notifications.url: ${message}`
      ])
    }
  })

  it("the archive URL is https and the signing key Base64 of exactly 64 bytes whose public half belongs to the seed", () => {
    const archive = (url: string, signing_key: string) => ({
      admin: { approvals: { audit_archive: { url, key_id: "k", signing_key } } }
    })
    expect(run(admin.auditArchiveValid, archive("https://archive.example.com", signingKey64))).toEqual([])
    expect(
      run(admin.auditArchiveValid, archive("http://archive.example.com", Buffer.alloc(32).toString("base64")))
    ).toEqual([
      "admin.approvals.audit_archive.url: must use https (got http)",
      "admin.approvals.audit_archive.signing_key: expected the Base64 encoding of exactly 64 bytes (Ed25519 private key: seed then public key)"
    ])
    const mismatched = Buffer.from(signingKey64, "base64")
    mismatched[40] = (mismatched[40] ?? 0) ^ 1
    expect(run(admin.auditArchiveValid, archive("https://archive.example.com", mismatched.toString("base64")))).toEqual(
      [
        "admin.approvals.audit_archive.signing_key: the public half (bytes 33-64) does not belong to the seed (bytes 1-32): was the key pasted from two different keys?"
      ]
    )
    expect(
      run(admin.auditArchiveValid, archive("https://archive.example.com", `${signingKey64.slice(0, -4)}!!==`))
    ).toHaveLength(1)
  })

  it("configuration review's step-up needs approvals.step_up.acr_values, and the review needs builtin mode", () => {
    const review = (policy: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      admin: { approvals: { policy_changes: { enabled: true, ...policy } } },
      ...extra
    })
    expect(run(admin.policyChangesStepUpConfigured, review({ require_step_up: true }))).toEqual([
      "admin.approvals.policy_changes.require_step_up: needs approvals.step_up.acr_values (the assurance levels your identity provider asserts in acr)"
    ])
    expect(
      run(
        admin.policyChangesStepUpConfigured,
        review({ require_step_up: true }, { approvals: { step_up: { acr_values: ["urn:mfa"] } } })
      )
    ).toEqual([])
    expect(run(admin.policyChangesStepUpConfigured, review({}))).toEqual([])
    const external = {
      auth: {
        mode: "external",
        issuer: "https://idp.example.com",
        external: { jwks_url: "https://idp.example.com/jwks" }
      }
    }
    expect(run(admin.policyChangesNeedBuiltin, review({}, external))).toEqual([
      "admin.approvals.policy_changes.enabled: needs auth.mode: builtin: security reviewers sign in on the gateway's own pages (/auth/login?role=security)"
    ])
    expect(run(admin.policyChangesNeedBuiltin, review({ enabled: false }, external))).toEqual([])
    expect(run(admin.policyChangesNeedBuiltin, review({}))).toEqual([])
  })

  it("each role's scopes are its own: an admin scope among the security reviewer's (or the approver's) is refused", () => {
    const scopes = (adminScopes: Array<string> | undefined, security: Array<string>) => ({
      admin: {
        ...(adminScopes === undefined ? {} : { required_scopes: adminScopes }),
        approvals: { policy_changes: { enabled: true, required_scopes: security } }
      }
    })
    expect(run(admin.roleScopesApart, scopes(undefined, []))).toEqual([])
    expect(run(admin.roleScopesApart, scopes(["corp:admin"], ["corp:security", "corp:mfa"]))).toEqual([])
    // Every administrator would hold the reviewer's scopes: no second person.
    expect(run(admin.roleScopesApart, scopes(undefined, ["gateway:admin", "corp:security"]))).toEqual([
      'admin.approvals.policy_changes.required_scopes: "gateway:admin" is a scope of both the admin and the security_reviewer role: each role\'s scopes must be its own, or holding one role would grant the other'
    ])
    // Every reviewer would be an administrator.
    expect(run(admin.roleScopesApart, scopes(["gateway:security"], []))).toEqual([
      'admin.approvals.policy_changes.required_scopes: "gateway:security" is a scope of both the admin and the security_reviewer role: each role\'s scopes must be its own, or holding one role would grant the other'
    ])
    // The approver's fixed scope belongs to neither.
    expect(run(admin.roleScopesApart, scopes(["gateway:admin", "gateway:approve"], []))).toEqual([
      'admin.required_scopes: "gateway:approve" is a scope of both the admin and the approver role: each role\'s scopes must be its own, or holding one role would grant the other'
    ])
    expect(run(admin.roleScopesApart, scopes(undefined, ["gateway:approve"]))).toEqual([
      'admin.approvals.policy_changes.required_scopes: "gateway:approve" is a scope of both the approver and the security_reviewer role: each role\'s scopes must be its own, or holding one role would grant the other'
    ])
  })

  it("local admin mode binds loopback only", () => {
    expect(run(admin.adminListenAddress, { admin: { listen: "[::1]:8081" } })).toEqual([])
    expect(run(admin.adminListenAddress, { admin: { listen: "0.0.0.0:8081" } })).toEqual([
      'admin.listen: admin.mode local binds loopback only (127.0.0.0/8, ::1 or localhost), got "0.0.0.0"'
    ])
    expect(run(admin.adminListenAddress, { admin: { listen: "10.0.0.5:8081" } })).toHaveLength(1)
    expect(run(admin.adminListenAddress, { admin: { listen: "8081" } })).toHaveLength(1)
  })

  it("remote admin mode requires public_url and client_id, registered as a downstream client in builtin mode", () => {
    expect(run(admin.remoteAdminConfigured, { admin: { mode: "remote" } })).toEqual([
      "admin.public_url: is required when admin.mode is remote",
      "admin.client_id: is required when admin.mode is remote"
    ])
    const remote = {
      admin: { mode: "remote", public_url: "https://admin.example.com", client_id: "console", listen: "0.0.0.0:8081" }
    }
    expect(run(admin.remoteAdminConfigured, remote)).toEqual([])
    // Remote binds any address (the HTTPS proxy is in front); local keeps loopback only.
    expect(run(admin.adminListenAddress, remote)).toEqual([])
    expect(checkRules(configOf(remote), noSecrets).map(({ path, message }) => `${path}: ${message}`)).toEqual([
      'admin.client_id: no client "console" in auth.sso.clients'
    ])
    const consoleClient = {
      id: "console",
      redirect_uris: ["https://admin.example.com/console/callback"],
      resources: ["https://admin.example.com"]
    }
    const registered = { ...remote, auth: { sso: { clients: [consoleClient] } } }
    expect(checkRules(configOf(registered), noSecrets)).toEqual([])
    expect(run(admin.remoteAdminNeedsBuiltin, registered)).toEqual([])
  })

  it("remote admin mode: an https origin (http on loopback only), the console's redirect and resource, builtin auth", () => {
    const remote = (public_url: string, fields: Record<string, unknown> = {}) => ({
      admin: { mode: "remote", public_url, client_id: "console", ...fields }
    })
    expect(run(admin.remoteAdminConfigured, remote("http://admin.example.com"))).toEqual([
      "admin.public_url: must use https (plain http is allowed only on a loopback host)"
    ])
    expect(run(admin.remoteAdminConfigured, remote("http://127.0.0.1:9443"))).toEqual([])
    expect(run(admin.remoteAdminConfigured, remote("https://admin.example.com/admin"))).toEqual([
      "admin.public_url: must be an origin (https://admin.example.com): the console and the Management API are served at its root"
    ])
    expect(run(admin.remoteAdminConfigured, remote("https://admin.example.com/?a=1"))).toEqual([
      "admin.public_url: must not contain a query"
    ])
    expect(run(admin.remoteAdminConfigured, remote("https://u:p@admin.example.com"))).toEqual([
      "admin.public_url: must not contain credentials"
    ])
    // A client without the console's callback or without the admin resource could never sign the console in.
    const wrong = {
      ...remote("https://admin.example.com"),
      auth: {
        sso: {
          clients: [
            {
              id: "console",
              redirect_uris: ["https://admin.example.com/callback"],
              resources: ["https://gw.example.com/mcp"]
            }
          ]
        }
      }
    }
    expect(run(admin.adminClientRegistered, wrong)).toEqual([
      'admin.client_id: client "console" must list the console\'s redirect URI https://admin.example.com/console/callback',
      'admin.client_id: client "console" must list the admin resource https://admin.example.com in resources'
    ])
    // The admin resource in remote mode is public_url's origin; a client naming the listener is refused.
    expect(
      run(auth.ssoClientResourcesKnown, {
        ...remote("https://admin.example.com"),
        auth: { sso: { clients: [{ ...client("a"), resources: ["http://127.0.0.1:8081"] }] } }
      })
    ).toEqual([
      'auth.sso.clients[0].resources[0]: "http://127.0.0.1:8081" is not a resource of this gateway: use server.public_url "https://gw.example.com/mcp" or the admin resource "https://admin.example.com" (the origin of admin.public_url)'
    ])
    expect(
      run(admin.remoteAdminNeedsBuiltin, { ...remote("https://admin.example.com"), auth: { mode: "external" } })
    ).toEqual([
      "admin.mode: remote needs auth.mode: builtin: the console signs administrators in at the gateway's own authorization server"
    ])
  })

  it("local admin mode: admin.client_id is optional and, when named, must fit the console at the loopback listener", () => {
    expect(run(admin.adminClientRegistered, { admin: { client_id: "console" } })).toEqual([
      'admin.client_id: no client "console" in auth.sso.clients'
    ])
    const local = {
      admin: { client_id: "console" },
      auth: {
        sso: {
          clients: [
            {
              id: "console",
              redirect_uris: ["http://127.0.0.1:8081/console/callback"],
              resources: ["http://127.0.0.1:8081"]
            }
          ]
        }
      }
    }
    expect(run(admin.adminClientRegistered, local)).toEqual([])
  })

  it("client_authorization.enabled requires its client_id", () => {
    expect(run(admin.clientAuthorizationConfigured, { client_authorization: { enabled: true } })).toEqual([
      "client_authorization.client_id: is required when client_authorization.enabled is true"
    ])
    expect(
      run(admin.clientAuthorizationConfigured, { client_authorization: { enabled: true, client_id: "portal" } })
    ).toEqual([])
  })

  it("server.listen is host:port with a port from 1 to 65535", () => {
    expect(run(server.listenAddress, { server: { listen: "0.0.0.0:70000" } })).toEqual([
      "server.listen: expected host:port (IPv6 as [::1]:8080) with a port from 1 to 65535"
    ])
  })

  it("server.public_url uses https unless its host is loopback, and has no fragment", () => {
    const at = (public_url: string) => ({
      server: { public_url },
      auth: { issuer: `${new URL(public_url).origin}/sso` }
    })
    expect(run(server.publicUrlSecure, at("http://gw.example.com/mcp"))).toEqual([
      "server.public_url: must use https (plain http is allowed only on a loopback host)"
    ])
    expect(run(server.publicUrlSecure, at("http://127.0.0.1:8080/mcp"))).toEqual([])
    expect(run(server.publicUrlSecure, at("https://gw.example.com/mcp#x"))).toEqual([
      "server.public_url: must not contain a fragment"
    ])
  })

  it("server.trusted_proxies holds IP addresses and CIDR blocks only", () => {
    const proxies = (trusted_proxies: ReadonlyArray<string>) => ({ server: { trusted_proxies } })
    expect(run(server.trustedProxiesFormat, proxies(["10.0.0.0/8", "192.0.2.10", "fd00::/8", "::1"]))).toEqual([])
    expect(
      run(server.trustedProxiesFormat, proxies(["proxy.example.com", "10.0.0.0/33", "fd00::/129", "10.0.0.1/8/1"]))
    ).toEqual([
      'server.trusted_proxies[0]: expected an IP address or CIDR block such as 10.0.0.0/8, got "proxy.example.com"',
      'server.trusted_proxies[1]: expected an IP address or CIDR block such as 10.0.0.0/8, got "10.0.0.0/33"',
      'server.trusted_proxies[2]: expected an IP address or CIDR block such as 10.0.0.0/8, got "fd00::/129"',
      'server.trusted_proxies[3]: expected an IP address or CIDR block such as 10.0.0.0/8, got "10.0.0.1/8/1"'
    ])
    expect(configOf().server.trusted_proxies).toEqual([])
  })

  it("the public and admin listeners do not share a port", () => {
    expect(run(server.listenersDistinct, { server: { listen: "0.0.0.0:8081" } })).toEqual([
      "admin.listen: uses the same port as server.listen (8081)"
    ])
    expect(run(server.listenersDistinct, { server: { listen: "127.0.0.2:8081" } })).toEqual([])
  })

  it("allowed_origins are exact origins, postgres URLs are postgres URLs, deadlines are positive", () => {
    expect(
      run(server.allowedOriginsExact, { allowed_origins: ["https://app.example.com", "https://app.example.com/"] })
    ).toEqual([
      'allowed_origins[1]: expected an origin such as https://app.example.com, got "https://app.example.com/"'
    ])
    expect(run(server.storageUrl, { storage: { type: "postgres", url: "mysql://u:pw@db/x" } })).toEqual([
      "storage.url: expected a postgres:// or postgresql:// URL"
    ])
    expect(run(server.requestTimeoutPositive, { request_timeout: "0s" })).toEqual([
      "request_timeout: must be greater than zero"
    ])
  })

  it("backend ids are unique", () => {
    expect(
      run(backends.backendIdsUnique, { backends: [backend({}), backend({ url: "https://b.example.com/mcp" })] })
    ).toEqual(['backends[1].id: duplicate backend id "a"'])
  })

  it("backend ids keep exposed names one-to-one: no '__', no trailing '_' (docs/mcp.md)", () => {
    expect(() => configOf({ backends: [backend({ id: "a__b" })] })).toThrow('must not contain "__" or end with "_"')
    expect(() => configOf({ backends: [backend({ id: "a_" })] })).toThrow('must not contain "__" or end with "_"')
    expect(configOf({ backends: [backend({ id: "a_b-c" })] }).backends[0]?.id).toBe("a_b-c")
  })

  it("tool patterns: one trailing * at most, only MCP tool-name characters, and each pattern in one rule only", () => {
    expect(() => configOf({ backends: [backend({ tool_rules: [{ tools: ["a*b"] }] })] })).toThrow(
      "only a single trailing * is supported"
    )
    // A name that can never match a tool would leave the tool it seemed to name to the next rule.
    for (const [pattern, where] of [
      ["delete_note\u034f", "U+034F at index 11"],
      ["delete_note\u200b", "U+200B at index 11"],
      ["delete note", "U+0020 at index 6"],
      ["d\u0435lete_*", "U+0435 at index 1"],
      ["github/create_issue", "U+002F at index 6"]
    ] as const) {
      expect(() => configOf({ backends: [backend({ tool_rules: [{ tools: [pattern] }] })] }), pattern).toThrow(
        `holds ${where}: MCP tool names have only letters, digits, _, - and . (this pattern would match no tool)`
      )
    }
    expect(() => configOf({ backends: [backend({ tool_rules: [{ tools: ["x".repeat(129)] }] })] })).toThrow(
      "a tool name has at most 128 characters"
    )
    const fine = configOf({
      backends: [backend({ tool_rules: [{ tools: ["*"] }, { tools: ["search_*", "v1.get-item", "x".repeat(128)] }] })]
    })
    expect(fine.backends[0]?.tool_rules.map((each) => each.tools)).toEqual([
      ["*"],
      ["search_*", "v1.get-item", "x".repeat(128)]
    ])
    expect(
      run(backends.toolPatternsUnique, {
        backends: [backend({ tool_rules: [{ tools: ["search_*"] }, { tools: ["x", "search_*"], publish: false }] })]
      })
    ).toEqual([
      'backends[0].tool_rules[1].tools[1]: "search_*" already appears in an earlier tool rule of this backend'
    ])
  })

  it("fixed headers cannot override the transport or the configured credentials", () => {
    const headers = {
      "Mcp-Protocol-Version": "x",
      "Mcp-Param-Region": "eu",
      "Keep-Alive": "timeout=5",
      Upgrade: "h2c",
      Expect: "100-continue",
      TE: "trailers",
      Authorization: "Bearer t",
      "X-Ok": "1"
    }
    expect(run(backends.backendHeadersAllowed, { backends: [backend({ headers })] })).toEqual([
      "backends[0].headers.Mcp-Protocol-Version: is set by the MCP transport and cannot be configured",
      "backends[0].headers.Mcp-Param-Region: is set by the MCP transport and cannot be configured",
      "backends[0].headers.Keep-Alive: is set by the MCP transport and cannot be configured",
      "backends[0].headers.Upgrade: is set by the MCP transport and cannot be configured",
      "backends[0].headers.Expect: is set by the MCP transport and cannot be configured",
      "backends[0].headers.TE: is set by the MCP transport and cannot be configured"
    ])
    expect(
      run(backends.backendHeadersAllowed, {
        backends: [backend({ headers, credentials: { type: "bearer", token: "t" } })]
      })
    ).toContain("backends[0].headers.Authorization: conflicts with credentials/oauth, which set Authorization")
    expect(run(backends.catalogRefreshPositive, { catalog: { refresh_interval: "500ms" } })).toEqual([
      "catalog.refresh_interval: must be at least 1s"
    ])
  })

  it("header values and credentials can be sent: no CR, LF or other control, never echoed", () => {
    const secret = "line1-SECRET7\nline2"
    expect(
      run(backends.backendHeadersAllowed, { backends: [backend({ headers: { "X-Key": secret, "X-Ok": "a\tb" } })] })
    ).toEqual(["backends[0].headers.X-Key: the value must be printable ASCII, without CR, LF or NUL"])
    const credentials = [
      { type: "bearer", token: secret },
      { type: "bearer", token: "has space" },
      { type: "basic", username: "a:b", password: secret },
      { type: "basic", username: "ok", password: "tab\there" }
    ]
    const problems = credentials.flatMap((each) =>
      run(backends.backendCredentialsSendable, { backends: [backend({ credentials: each })] })
    )
    expect(problems).toEqual([
      "backends[0].credentials.token: must be a bearer token: letters, digits and - . _ ~ + /, then any = (no spaces, CR or LF)",
      "backends[0].credentials.token: must be a bearer token: letters, digits and - . _ ~ + /, then any = (no spaces, CR or LF)",
      "backends[0].credentials.username: must not contain a control character or a colon",
      "backends[0].credentials.password: must not contain a control character (CR, LF, tab, NUL, …)",
      "backends[0].credentials.password: must not contain a control character (CR, LF, tab, NUL, …)"
    ])
    expect(problems.join("\n")).not.toContain("SECRET7")
    const fine = [
      { type: "bearer", token: "eyJhbGciOi.abc-_~+/==" },
      { type: "basic", username: "svc", password: "pässword with spaces" }
    ]
    for (const each of fine) {
      expect(run(backends.backendCredentialsSendable, { backends: [backend({ credentials: each })] })).toEqual([])
    }
  })

  it("backend URLs use https unless allow_insecure_http is true", () => {
    expect(run(backends.backendUrlsSecure, { backends: [backend({ url: "http://a.example.com/mcp" })] })).toEqual([
      "backends[0].url: must use https (set allow_insecure_http: true to allow plain http)"
    ])
    expect(
      run(backends.backendUrlsSecure, {
        backends: [backend({ url: "http://a.example.com/mcp", allow_insecure_http: true })]
      })
    ).toEqual([])
    expect(
      run(backends.backendUrlsSecure, {
        backends: [backend({ url: "ws://a.example.com/mcp", allow_insecure_http: true })]
      })
    ).toEqual(["backends[0].url: must use https"])
    expect(
      run(backends.backendUrlsSecure, { backends: [backend({ url: "https://svc:pw@a.example.com/mcp" })] })
    ).toEqual(["backends[0].url: must not contain a user name or password: put the secret in headers or credentials"])
  })

  it("backend OAuth issuers use https; credentials and oauth are exclusive; timeouts are positive", () => {
    const oauth = { type: "client_credentials", issuer: "http://auth.example.com", client_id: "gw", client_secret: "s" }
    expect(run(backends.backendOAuthIssuerSecure, { backends: [backend({ oauth })] })).toEqual([
      "backends[0].oauth.issuer: must use https (plain http is allowed only on a loopback host)"
    ])
    expect(
      run(backends.backendAuthExclusive, {
        backends: [backend({ oauth, credentials: { type: "bearer", token: "t" } })]
      })
    ).toEqual(["backends[0]: set credentials or oauth, not both"])
    expect(run(backends.backendTimeoutsPositive, { backends: [backend({ timeouts: { call: "0ms" } })] })).toEqual([
      "backends[0].timeouts.call: must be greater than zero"
    ])
  })

  it("runs the rules over the sections that decoded when others did not", () => {
    const partial = { admin: configOf({ admin: { listen: "0.0.0.0:8081" } }).admin }
    expect(checkRules(partial, noSecrets).map((each) => each.path)).toEqual(["admin.listen"])
  })
})
