/**
 * The console's identity-provider page (docs/console.md, "Identities and access"): the stored
 * settings with secrets shown only as configured or not, the whole-settings form at its revision
 * (412 when stale), and probe and test of the drafted connection against a real OIDC provider and a
 * real slapd — the same functions as the Management API's; typed secrets never come back in a page.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { consoleSections } from "../../../src/admin/console/pages/index.js"
import { type ConsoleAnswer, ConsoleProblem, type ConsoleRoute } from "../../../src/admin/console/route.js"
import { IdentityProviders } from "../../../src/identity/providers/service.js"
import { AuditEventRepo } from "../../../src/store/audit-events.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { storeKinds } from "../../support/databases.js"
import { providerForPort } from "../../support/enterprise-sign-in.js"
import { freePort } from "../../support/gateway-process.js"
import { inGateway, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"
import {
  directorySettings,
  type LdapCertificates,
  makeLdapCertificates,
  type Slapd,
  startSlapd,
  USERS
} from "../../support/slapd.js"

const route = (method: "GET" | "POST", path: string): ConsoleRoute =>
  consoleSections.flatMap((section) => section.routes).find((r) => r.method === method && r.path === path)!

const show = route("GET", "/console/identity-providers")
const save = route("POST", "/console/identity-providers")
const probe = route("POST", "/console/identity-providers/probe")
const test = route("POST", "/console/identity-providers/test")

const pageOf = (answer: ConsoleAnswer | ConsoleProblem): string => {
  if (answer instanceof ConsoleProblem) throw new Error(`expected a page, got ${answer.status}: ${answer.message}`)
  if (answer._tag !== "Page") throw new Error(`expected a page, got a redirect to ${answer.location}`)
  return answer.body.text
}

const problemOf = (answer: ConsoleAnswer | ConsoleProblem) => {
  if (!(answer instanceof ConsoleProblem)) throw new Error(`expected a problem, got ${answer._tag}`)
  return { status: answer.status, message: answer.message }
}

const post = (gateway: OAuthGateway, target: ConsoleRoute, fields: Record<string, string>) =>
  Effect.flatMap(builtinAdmin(gateway), (admin) =>
    runConsoleRoute(gateway, target, consoleRequest(admin, { form: new URLSearchParams(fields) }))
  )

const stored = (gateway: OAuthGateway) => inGateway(gateway)(Effect.flatMap(IdentityProviders, (p) => p.record))

const OIDC_SECRET = "console-oidc-secret-0123456789"
const BIND_SECRET = "console-bind-secret-0123456789"

describe.each(storeKinds)("console: identity providers (%s)", (kind) => {
  it.scoped(
    "shows revision 0 at first; a save replaces both connections at its revision; secrets never come back",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway({ kind })
        const admin = yield* builtinAdmin(gateway)
        const first = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin)))
        expect(first).toContain('name="revision" value="0"')
        expect(first).toContain("Never saved")
        expect(first).toContain("Client secret (not configured)")
        expect(first).toContain('<button type="submit">Save both connections</button>')

        const fields = {
          revision: "0",
          "oidc.issuer": "https://login.example.com",
          "oidc.client_id": `gateway"><script>`,
          "oidc.client_secret": OIDC_SECRET,
          "oidc.token_auth_method": "client_secret_post",
          "oidc.scopes": "openid\nprofile",
          "oidc.groups_claim": "groups",
          "ldap.url": "ldaps://ldap.example.com:636",
          "ldap.bind_password": BIND_SECRET
        }
        expect(yield* post(gateway, save, fields)).toMatchObject({
          _tag: "SeeOther",
          location: "/console/identity-providers"
        })
        const record = yield* stored(gateway)
        expect(record).toMatchObject({
          revision: "1",
          oidc: {
            enabled: false,
            issuer: "https://login.example.com",
            client_id: `gateway"><script>`,
            token_auth_method: "client_secret_post",
            scopes: ["openid", "profile"],
            client_secret_configured: true
          },
          ldap: { enabled: false, url: "ldaps://ldap.example.com:636", bind_password_configured: true }
        })
        const audit = yield* inGateway(gateway)(
          Effect.flatMap(AuditEventRepo, (repo) => repo.forTarget("identity_providers"))
        )
        expect(audit.map((event) => event.action)).toContain("identity.providers_updated")

        const page = pageOf(yield* runConsoleRoute(gateway, show, consoleRequest(admin)))
        expect(page).toContain("Client secret (configured; leave empty to keep it)")
        expect(page).toContain('value="gateway&quot;&gt;&lt;script&gt;"')
        expect(page).not.toContain("<script>")
        expect(page).not.toContain(OIDC_SECRET)
        expect(page).not.toContain(BIND_SECRET)

        // Stale: the form rendered at 0 is refused, nothing changes.
        expect(problemOf(yield* post(gateway, save, { ...fields, "oidc.client_id": "other" }))).toMatchObject({
          status: 412,
          message: expect.stringContaining('"1"')
        })
        // Bad input names the field; an empty secret field keeps the secret, the box removes it.
        expect(
          problemOf(yield* post(gateway, save, { ...fields, revision: "1", "oidc.issuer": "http://x" }))
        ).toMatchObject({
          status: 400,
          message: expect.stringContaining("oidc.issuer")
        })
        expect(
          problemOf(yield* post(gateway, save, { ...fields, revision: "1", "ldap.bind_dn": "cn=a\u0001" }))
        ).toMatchObject({ status: 400, message: "ldap.bind_dn: must not contain control characters" })
        expect(
          problemOf(yield* post(gateway, save, { ...fields, revision: "1", "oidc.tenant_claim": "x".repeat(300) }))
        ).toMatchObject({ status: 400, message: expect.stringContaining("oidc.tenant_claim") })
        expect((yield* stored(gateway)).revision).toBe("1")
        const { "oidc.client_secret": _, ...keeping } = fields
        yield* post(gateway, save, { ...keeping, revision: "1", "ldap.clear_bind_password": "on" })
        expect(yield* stored(gateway)).toMatchObject({
          revision: "2",
          oidc: { client_secret_configured: true },
          ldap: { bind_password_configured: false }
        })
      })
  )
})

describe("console: trying a drafted connection", () => {
  it.scoped("probes an OIDC provider and shows a test's one-use start link, saving nothing", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const provider = yield* providerForPort(port)
      const gateway = yield* oauthGateway({ port })
      const draft = {
        revision: "0",
        "oidc.enabled": "on",
        "oidc.issuer": provider.issuer,
        "oidc.client_id": provider.clientId,
        "oidc.client_secret": provider.clientSecret,
        "oidc.ca_pem": provider.ca.caPem,
        source: "oidc"
      }
      const probed = pageOf(yield* post(gateway, probe, draft))
      expect(probed).toContain("The OIDC provider answered")
      expect(probed).toContain(`Issuer <code>${provider.issuer}</code>; 1 signing key(s).`)
      // The draft is shown again to be edited, its secret not.
      expect(probed).toContain(`value="${provider.clientId}"`)
      expect(probed).not.toContain(provider.clientSecret)
      const unreachable = pageOf(yield* post(gateway, probe, { ...draft, "oidc.issuer": "https://127.0.0.1:1" }))
      expect(unreachable).toContain("The OIDC provider could not be reached")
      expect(unreachable).toContain("discovery_failed")
      expect(problemOf(yield* post(gateway, probe, { ...draft, source: "ftp" }))).toMatchObject({
        status: 400,
        message: expect.stringContaining("source")
      })

      const started = pageOf(yield* post(gateway, test, draft))
      const link = /href="([^"]*\/sso\/login\/test\?[^"]+)"/.exec(started)
      expect(link).not.toBeNull()
      const startUrl = link![1]!.replaceAll("&amp;", "&")
      expect(startUrl.startsWith(`${gateway.baseUrl}/sso/login/test?`)).toBe(true)
      expect(started).not.toContain(provider.clientSecret)
      // The link is the test's: it sends the browser to the provider.
      const toProvider = yield* Effect.promise(() => fetch(startUrl, { redirect: "manual" }))
      expect(toProvider.status).toBe(303)
      expect((yield* stored(gateway)).revision).toBe("0")
    })
  )
})

let certificates: LdapCertificates
let slapd: Slapd

beforeAll(async () => {
  certificates = makeLdapCertificates()
  slapd = await startSlapd(certificates, "verified")
})

afterAll(async () => {
  await slapd?.stop()
  certificates?.remove()
})

describe("console: trying a drafted directory", () => {
  it.scopedLive("probes the directory and tests a sign-in; the password typed is never shown again", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const settings = directorySettings(slapd.ldapsUrl!, certificates.caPem)
      const draft: Record<string, string> = {
        revision: "0",
        "ldap.url": settings.url,
        "ldap.bind_dn": settings.bind_dn,
        "ldap.bind_password": "service-password-1",
        "ldap.user_search_base": settings.user_search_base,
        "ldap.user_search_filter": settings.user_search_filter,
        "ldap.user_id_attribute": settings.user_id_attribute,
        "ldap.user_name_attribute": settings.user_name_attribute,
        "ldap.group_search_base": settings.group_search_base!,
        "ldap.group_search_filter": settings.group_search_filter!,
        "ldap.group_id_attribute": settings.group_id_attribute!,
        "ldap.group_name_attribute": settings.group_name_attribute!,
        "ldap.ca_pem": certificates.caPem,
        source: "ldap"
      }
      const probed = pageOf(yield* post(gateway, probe, draft))
      expect(probed).toContain("The directory answered")
      expect(probed).not.toContain("service-password-1")

      const alice = USERS.alice
      const signedIn = pageOf(yield* post(gateway, test, { ...draft, username: "alice", password: alice.password }))
      expect(signedIn).toContain("The directory signed the person in")
      expect(signedIn).toContain("name Alice Liddell")
      expect(signedIn).toContain("engineering")
      expect(signedIn).not.toContain(alice.password)
      const refused = pageOf(yield* post(gateway, test, { ...draft, username: "alice", password: "wrong-password" }))
      expect(refused).toContain("The directory refused the sign-in")
      expect(refused).not.toContain("wrong-password")
      // Past 5 refused for one name the test is refused without asking the directory: 429 with its wait,
      // which the console answers as Retry-After.
      for (let n = 0; n < 4; n++)
        yield* post(gateway, test, { ...draft, username: "alice", password: "wrong-password" })
      const throttled = yield* post(gateway, test, { ...draft, username: "alice", password: alice.password })
      if (!(throttled instanceof ConsoleProblem)) throw new Error(`expected a problem, got ${throttled._tag}`)
      expect(throttled.status).toBe(429)
      expect(throttled.retryAfter).toBeGreaterThan(0)
      expect(throttled.message).toContain(`try again in ${throttled.retryAfter} seconds`)
      expect(problemOf(yield* post(gateway, test, { ...draft, "ldap.url": "ldap://" }))).toMatchObject({ status: 400 })
      expect((yield* stored(gateway)).revision).toBe("0")
    })
  )
})
