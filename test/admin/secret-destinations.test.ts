/**
 * docs/tool-sources.md, "Secrets", and docs/enterprise-sign-in.md, "Identity-provider settings" — a
 * stored secret never follows a changed destination: a write that keeps one (`{"configured": true}` for
 * a tool source, an omitted secret for an identity connection) while changing where it is sent is
 * refused with a 400 naming the secret, and nothing is written; the same write with the secret sent
 * again, or keeping the destination, succeeds. On both stores, through the Management API.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ApiAnswer, adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { oauthGateway } from "../support/oauth-gateway.js"
import { makeTestCa } from "../support/test-ca.js"
import { backendServer } from "../support/tool-source-gateway.js"

const SECRET = "stored-secret-value-0123456789"
const configured = { configured: true }
const problem = (answer: ApiAnswer) => String(answer.body["error_description"])

/** An HTTP server that records every `x-api-key` it receives and answers 404. */
const recordingServer = Effect.acquireRelease(
  Effect.async<{ url: string; keys: Array<string>; close: () => void }>((resume) => {
    const keys: Array<string> = []
    const server = createServer((request, response) => {
      const key = request.headers["x-api-key"]
      if (typeof key === "string") keys.push(key)
      request.resume()
      response.statusCode = 404
      response.end()
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/mcp`, keys, close: () => server.close() }))
    })
  }),
  (server) => Effect.sync(server.close)
)

const refusedFor = (answer: ApiAnswer, pointer: string, field: string) => {
  expect(answer.status).toBe(400)
  expect(answer.body).toMatchObject({ error: "invalid_request" })
  expect(problem(answer)).toContain(`${pointer}: ${field} changed where this secret is sent`)
  expect(problem(answer)).toContain("send its value again")
  expect(JSON.stringify(answer.body)).not.toContain(SECRET)
}

const petstore = {
  openapi: "3.0.3",
  info: { title: "pets", version: "1" },
  servers: [{ url: "https://api.example.com/v1" }],
  paths: { "/pets": { get: { operationId: "listPets", responses: { "200": { description: "ok" } } } } }
}

describe.each(storeKinds)("Management API: a stored secret does not follow a changed destination (%s)", (kind) => {
  it.scopedLive("backends: headers and credentials stay with the url's origin, the OAuth secret with its issuer", () =>
    Effect.gen(function* () {
      const alpha = yield* backendServer("alpha")
      const fake = yield* recordingServer
      const gateway = yield* oauthGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
      const body = {
        id: "alpha",
        url: alpha.url,
        allow_insecure_http: true,
        headers: { "x-api-key": SECRET },
        credentials: { type: "bearer", token: SECRET }
      }
      const created = yield* api.post("/api/v1/backends", body)
      expect(created.status).toBe(201)
      const keep = { headers: { "x-api-key": configured }, credentials: { type: "bearer", token: configured } }

      // Another origin: refused, naming each kept secret; nothing written, nothing sent to the new server.
      const moved = yield* api.put("/api/v1/backends/alpha", { ...body, ...keep, url: fake.url }, ifMatch(created.body))
      refusedFor(moved, "/headers/x-api-key", "url")
      expect(problem(moved)).toContain("/credentials/token: url changed")
      expect((yield* api.get("/api/v1/backends/alpha")).body).toMatchObject({
        revision: "1",
        definition: { url: alpha.url }
      })
      // Keeping only one of them is refused as well.
      const oneKept = yield* api.put(
        "/api/v1/backends/alpha",
        { ...body, url: fake.url, headers: { "x-api-key": configured } },
        ifMatch(created.body)
      )
      refusedFor(oneKept, "/headers/x-api-key", "url")
      expect(problem(oneKept)).not.toContain("/credentials/token")

      // The same origin keeps them.
      const kept = yield* api.put(
        "/api/v1/backends/alpha",
        { ...body, ...keep, required_scopes: ["tools:alpha"] },
        ifMatch(created.body)
      )
      expect(kept.status).toBe(200)
      expect(kept.body).toMatchObject({ revision: "2", definition: { ...keep, required_scopes: ["tools:alpha"] } })

      // Sent again, the move is applied: the new server receives the value sent, never the stored one.
      const resent = yield* api.put(
        "/api/v1/backends/alpha",
        { ...body, url: fake.url, headers: { "x-api-key": "sent-again" }, credentials: { type: "bearer", token: "t" } },
        ifMatch(kept.body)
      )
      expect(resent.status).toBe(200)
      expect(fake.keys.length).toBeGreaterThan(0)
      expect(new Set(fake.keys)).toEqual(new Set(["sent-again"]))

      // OAuth client credentials: the client secret stays with its issuer and with the url's origin.
      const oauth = { type: "client_credentials", issuer: "https://127.0.0.1:9", client_id: "gateway" }
      const withOAuth = {
        id: "beta",
        url: fake.url,
        allow_insecure_http: true,
        oauth: { ...oauth, client_secret: SECRET },
        timeouts: { connect: "500ms", call: "1s" }
      }
      const beta = yield* api.post("/api/v1/backends", withOAuth)
      expect(beta.status).toBe(201)
      const keepOAuth = { ...withOAuth, oauth: { ...oauth, client_secret: configured } }
      refusedFor(
        yield* api.put(
          "/api/v1/backends/beta",
          { ...keepOAuth, oauth: { ...keepOAuth.oauth, issuer: "https://127.0.0.2:9" } },
          ifMatch(beta.body)
        ),
        "/oauth/client_secret",
        "oauth.issuer"
      )
      refusedFor(
        yield* api.put("/api/v1/backends/beta", { ...keepOAuth, url: alpha.url }, ifMatch(beta.body)),
        "/oauth/client_secret",
        "url"
      )
      const oauthKept = yield* api.put(
        "/api/v1/backends/beta",
        { ...keepOAuth, oauth: { ...keepOAuth.oauth, scopes: ["read"] } },
        ifMatch(beta.body)
      )
      expect(oauthKept.status).toBe(200)
      expect(oauthKept.body).toMatchObject({ definition: { oauth: { client_secret: configured, scopes: ["read"] } } })
      expect(fake.keys).not.toContain(SECRET)
    })
  )

  it.scopedLive("HTTP tools and OpenAPI imports: their secrets stay with the origin their requests go to", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
      const tool = {
        id: "weather",
        headers: { "x-api-key": SECRET },
        credentials: { type: "basic", username: "gw", password: SECRET },
        tool: { name: "forecast", method: "GET", url: "https://api.example.com/forecast/{city}" }
      }
      const created = yield* api.post("/api/v1/http-tools", tool)
      expect(created.status).toBe(201)
      const keep = {
        headers: { "x-api-key": configured },
        credentials: { type: "basic", username: "gw", password: configured }
      }
      for (const url of [
        "https://evil.example.com/forecast/{city}",
        "https://api.example.com:8443/forecast/{city}",
        "http://api.example.com/forecast/{city}"
      ]) {
        const moved = yield* api.put(
          "/api/v1/http-tools/weather",
          { ...tool, ...keep, allow_insecure_http: true, tool: { ...tool.tool, url } },
          ifMatch(created.body)
        )
        refusedFor(moved, "/headers/x-api-key", "tool.url")
        expect(problem(moved)).toContain("/credentials/password: tool.url changed")
      }
      const samePlace = yield* api.put(
        "/api/v1/http-tools/weather",
        { ...tool, ...keep, tool: { ...tool.tool, url: "https://API.example.com:443/v2/forecast/{city}" } },
        ifMatch(created.body)
      )
      expect(samePlace.status).toBe(200)
      expect(samePlace.body).toMatchObject({ revision: "2", definition: keep })
      const resent = yield* api.put(
        "/api/v1/http-tools/weather",
        { ...tool, tool: { ...tool.tool, url: "https://other.example.com/forecast/{city}" } },
        ifMatch(samePlace.body)
      )
      expect(resent.status).toBe(200)

      const imported = { id: "pets", source: { document: petstore }, headers: { "x-api-key": SECRET } }
      const pets = yield* api.post("/api/v1/openapi-imports", imported)
      expect(pets.status).toBe(201)
      const keepPets = { ...imported, headers: { "x-api-key": configured } }
      refusedFor(
        yield* api.put(
          "/api/v1/openapi-imports/pets",
          { ...keepPets, server_url: "https://evil.example.com/v1" },
          ifMatch(pets.body)
        ),
        "/headers/x-api-key",
        "server_url (or the document's servers)"
      )
      refusedFor(
        yield* api.put(
          "/api/v1/openapi-imports/pets",
          { ...keepPets, source: { document: { ...petstore, servers: [{ url: "https://evil.example.com/v1" }] } } },
          ifMatch(pets.body)
        ),
        "/headers/x-api-key",
        "server_url (or the document's servers)"
      )
      const petsKept = yield* api.put(
        "/api/v1/openapi-imports/pets",
        { ...keepPets, server_url: "https://api.example.com/v2" },
        ifMatch(pets.body)
      )
      expect(petsKept.status).toBe(200)
      expect(petsKept.body).toMatchObject({ revision: "2", definition: { headers: { "x-api-key": configured } } })
    })
  )

  it.scoped("identity providers: the OIDC secret stays with its issuer, the LDAP password with its address", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const api = managementApi(gateway, yield* adminToken(gateway))
      const path = "/api/v1/identity-providers"
      const oidc = { enabled: false, issuer: "https://login.example.com", client_id: "gateway" }
      const ldap = { enabled: false, url: "ldaps://ldap.example.com", bind_dn: "cn=gateway,dc=example,dc=com" }
      const saved = yield* api.put(
        path,
        { oidc: { ...oidc, client_secret: SECRET }, ldap: { ...ldap, bind_password: SECRET } },
        { "if-match": '"0"' }
      )
      expect(saved.status).toBe(200)

      const refused = (answer: ApiAnswer, message: string) => {
        expect(answer.status).toBe(400)
        expect(answer.body).toMatchObject({ error: "invalid_request" })
        expect(problem(answer)).toContain(message)
        expect(JSON.stringify(answer.body)).not.toContain(SECRET)
      }
      const oidcMoved =
        "oidc.client_secret: the issuer, client id or trusted CA changed, so the stored secret is not kept"
      const ldapMoved =
        "ldap.bind_password: the directory's address (url scheme, host or port), bind DN or trusted CA changed"
      // A CA of someone's own: it could answer for the same address, so the secret does not follow it.
      const ca = makeTestCa("someone else's CA")
      const otherCa = ca.caPem
      ca.remove()
      for (const [body, message] of [
        [{ oidc: { ...oidc, issuer: "https://evil.example.com" }, ldap }, oidcMoved],
        [{ oidc: { ...oidc, client_id: "other" }, ldap }, oidcMoved],
        [{ oidc, ldap: { ...ldap, url: "ldaps://evil.example.com" } }, ldapMoved],
        [{ oidc, ldap: { ...ldap, url: "ldaps://ldap.example.com:1636" } }, ldapMoved],
        [{ oidc, ldap: { ...ldap, url: "ldap://ldap.example.com" } }, ldapMoved],
        [{ oidc, ldap: { ...ldap, bind_dn: "cn=admin,dc=example,dc=com" } }, ldapMoved],
        [{ oidc, ldap: { ...ldap, ca_pem: otherCa } }, ldapMoved],
        [{ oidc: { ...oidc, ca_pem: otherCa }, ldap }, oidcMoved],
        [{ oidc, ldap: { enabled: false } }, ldapMoved]
      ] as const) {
        refused(yield* api.put(path, body, ifMatch(saved.body)), message)
      }
      expect((yield* api.get(path)).body).toMatchObject({ revision: "1", oidc, ldap })

      // The same destination (the default port written out, another case of host) keeps both secrets.
      const kept = yield* api.put(
        path,
        {
          oidc: { ...oidc, groups_claim: "groups" },
          ldap: { ...ldap, url: "ldaps://LDAP.example.com:636", user_id_attribute: "entryUUID" }
        },
        ifMatch(saved.body)
      )
      expect(kept.status).toBe(200)
      expect(kept.body).toMatchObject({
        revision: "2",
        oidc: { client_secret_configured: true },
        ldap: { bind_password_configured: true }
      })
      // Sent again (or cleared), the new destination is saved.
      const moved = yield* api.put(
        path,
        {
          oidc: { ...oidc, issuer: "https://other.example.com", client_secret: "another-secret" },
          ldap: { ...ldap, url: "ldaps://other.example.com", bind_password: "" }
        },
        ifMatch(kept.body)
      )
      expect(moved.status).toBe(200)
      expect(moved.body).toMatchObject({
        oidc: { issuer: "https://other.example.com", client_secret_configured: true },
        ldap: { url: "ldaps://other.example.com", bind_password_configured: false }
      })
    })
  )
})
