/**
 * docs/management-api.md, "Tool sources" — the Management API of managed tool sources on a real
 * in-process gateway with real MCP backends, on both stores: the YAML backends until the first write
 * imports them; CRUD with If-Match; secrets write-only (never in an answer, a row or a log line); a
 * change reaching /mcp `tools/list` after one reload; a required backend that cannot connect refusing
 * the change with the old generation serving and nothing written; hostile input refused precisely.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AuditEventRepo } from "../../src/store/audit-events.js"
import { adminToken, ifMatch, managementApi } from "../support/admin-api.js"
import { storeKinds } from "../support/databases.js"
import { LogCapture } from "../support/logs.js"
import { inGateway, oauthGateway } from "../support/oauth-gateway.js"
import { backendServer, mcpUser } from "../support/tool-source-gateway.js"

const SECRET = "header-secret-value-0123456789"

const backendBody = (id: string, url: string, extra: Record<string, unknown> = {}) => ({
  id,
  url,
  allow_insecure_http: true,
  tool_rules: [{ tools: ["*"] }],
  headers: { "x-api-key": SECRET },
  ...extra
})

describe.each(storeKinds)("Management API: tool sources (%s)", (kind) => {
  it.scopedLive(
    "the first write imports the YAML backends; a created backend reaches tools/list after one reload; If-Match guards updates and deletes; secrets stay write-only",
    () =>
      Effect.gen(function* () {
        const alpha = yield* backendServer("alpha")
        const beta = yield* backendServer("beta")
        const logs = new LogCapture()
        const gateway = yield* oauthGateway({
          kind,
          logs,
          patch: {
            backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }]
          }
        })
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const toolNames = yield* mcpUser(gateway, ["alpha", "beta"])
        expect(yield* toolNames).toEqual(["alpha__echo"])

        const before = yield* api.get("/api/v1/backends")
        expect(before.status).toBe(200)
        expect(before.body).toMatchObject({ managed: false, items: [{ kind: "backend", id: "alpha", revision: "1" }] })

        const created = yield* api.post("/api/v1/backends", backendBody("beta", beta.url))
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({
          kind: "backend",
          id: "beta",
          revision: "1",
          definition: { headers: { "x-api-key": { configured: true } }, enabled: true }
        })
        expect(yield* toolNames).toEqual(["alpha__echo", "beta__echo", "beta__search"])
        const after = yield* api.get("/api/v1/backends")
        expect(after.body).toMatchObject({ managed: true })
        expect((after.body["items"] as Array<{ id: string }>).map((item) => item.id)).toEqual(["alpha", "beta"])

        // Updates: If-Match required and current; {"configured": true} keeps the stored secret.
        const changed = { ...backendBody("beta", beta.url), tool_rules: [{ tools: ["echo"] }] }
        expect((yield* api.put("/api/v1/backends/beta", changed)).status).toBe(428)
        expect((yield* api.put("/api/v1/backends/beta", changed, { "if-match": '"7"' })).status).toBe(412)
        const kept = yield* api.put(
          "/api/v1/backends/beta",
          { ...changed, headers: { "x-api-key": { configured: true } } },
          ifMatch(created.body)
        )
        expect(kept.status).toBe(200)
        expect(kept.body).toMatchObject({ revision: "2" })
        expect(yield* toolNames).toEqual(["alpha__echo", "beta__echo"])

        const rows = yield* inGateway(gateway)(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM managed_sources`)
        )
        expect(JSON.stringify(rows)).not.toContain(SECRET)
        const betaRow = rows.find((row) => row["id"] === "beta")
        expect(JSON.parse(String(betaRow?.["definition"]))["headers"]).toEqual({
          "x-api-key": { sealed: expect.stringMatching(/^v1\./) }
        })
        const audit = yield* inGateway(gateway)(Effect.flatMap(AuditEventRepo, (repo) => repo.forTarget("beta")))
        expect(audit.map((event) => event.action)).toEqual(["source.created", "source.updated"])

        // A definition saved before tool patterns were checked (`crm:search` can match no MCP tool name)
        // still loads: read, listed, and removed by the next write's reload, never a 500.
        yield* inGateway(gateway)(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql`UPDATE managed_sources SET definition = replace(definition, '"tools":["echo"]', '"tools":["crm:search"]') WHERE id = 'beta'`
          )
        )
        const old = yield* api.get("/api/v1/backends/beta")
        expect(old.status).toBe(200)
        expect(old.body["definition"]).toMatchObject({ tool_rules: [{ tools: ["crm:search"] }] })
        expect((yield* api.get("/api/v1/backends")).status).toBe(200)

        // Deleting: If-Match, at once; the tools are gone after the reload.
        expect((yield* api.send("DELETE", "/api/v1/backends/beta")).status).toBe(428)
        const deleted = yield* api.send("DELETE", "/api/v1/backends/beta", undefined, ifMatch(kept.body))
        expect(deleted.status).toBe(204)
        expect(yield* toolNames).toEqual(["alpha__echo"])
        expect((yield* api.get("/api/v1/backends/beta")).status).toBe(404)

        for (const answer of [before, created, after, kept]) expect(JSON.stringify(answer.body)).not.toContain(SECRET)
        expect(logs.text()).not.toContain(SECRET)
        expect(logs.events("config.applied").map((event) => event["action"])).toEqual(["create", "update", "delete"])
      })
  )

  it.scopedLive(
    "a required backend that cannot connect refuses the change: the old generation serves, nothing is written",
    () =>
      Effect.gen(function* () {
        const alpha = yield* backendServer("alpha")
        const gateway = yield* oauthGateway({
          kind,
          patch: {
            backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }]
          }
        })
        const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
        const toolNames = yield* mcpUser(gateway, ["alpha", "down"])
        const refused = yield* api.post(
          "/api/v1/backends",
          backendBody("down", "http://127.0.0.1:9/mcp", { required: true, timeouts: { connect: "500ms", call: "1s" } })
        )
        expect(refused.status).toBe(409)
        expect(refused.body).toMatchObject({ error: "not_applied" })
        expect(String(refused.body["error_description"])).toContain("required backend(s) not reachable: down")
        expect(yield* toolNames).toEqual(["alpha__echo"])
        expect((yield* api.get("/api/v1/backends/down")).status).toBe(404)
        // Not even the initialization was written: the failed build came before the commit.
        expect((yield* api.get("/api/v1/backends")).body).toMatchObject({ managed: false })
      })
  )

  it.scopedLive("hostile input is refused precisely and writes nothing", () =>
    Effect.gen(function* () {
      const alpha = yield* backendServer("alpha")
      const gateway = yield* oauthGateway({
        kind,
        patch: { backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true }] }
      })
      const api = managementApi(gateway, yield* adminToken(gateway, {}, Date.now()))
      const problem = (answer: { body: Record<string, unknown> }) => String(answer.body["error_description"])

      const unknownKey = yield* api.post("/api/v1/backends", { ...backendBody("b1", alpha.url), colour: "red" })
      expect(unknownKey.status).toBe(400)
      expect(problem(unknownKey)).toContain("colour")
      const wrongType = yield* api.post("/api/v1/backends", { ...backendBody("b1", alpha.url), required: "yes" })
      expect(wrongType.status).toBe(400)
      expect(problem(wrongType)).toContain("required")
      for (const id of ["../etc", "a/b", "A", "x__y", ""]) {
        expect((yield* api.post("/api/v1/backends", backendBody(id, alpha.url))).status).toBe(400)
      }
      // A rule naming a tool with an invisible character would match nothing, leaving the tool to `*`.
      const invisible = yield* api.post(
        "/api/v1/backends",
        backendBody("b1", alpha.url, {
          tool_rules: [{ tools: ["*"] }, { tools: ["delete_note\u034f"], write: true }]
        })
      )
      expect(invisible.status).toBe(400)
      expect(problem(invisible)).toContain("holds U+034F at index 11: MCP tool names have only letters, digits")
      expect((yield* api.get("/api/v1/backends/b1")).status).toBe(404)
      expect((yield* api.get("/api/v1/backends/..%2F..%2Fetc")).status).toBe(404)
      expect((yield* api.get("/api/v1/backends/a%00b")).status).toBe(400)
      const insecure = yield* api.post("/api/v1/backends", {
        ...backendBody("b1", alpha.url),
        allow_insecure_http: false
      })
      expect(insecure.status).toBe(400)
      expect(problem(insecure)).toContain("must use https")
      // A password in the URL would be shown wherever the URL is: refused, and not echoed back.
      const userinfo = yield* api.post("/api/v1/backends", {
        ...backendBody("b1", alpha.url.replace("http://", "http://svc:url-password@"))
      })
      expect(userinfo.status).toBe(400)
      expect(problem(userinfo)).toContain("must not contain a user name or password")
      expect(JSON.stringify(userinfo.body)).not.toContain("url-password")
      const huge = yield* api.post("/api/v1/backends", {
        ...backendBody("b1", alpha.url),
        pad: "x".repeat(1024 * 1024)
      })
      expect(huge.status).toBe(413)
      const keepNothing = yield* api.post("/api/v1/backends", {
        ...backendBody("b1", alpha.url),
        headers: { "x-api-key": { configured: true } }
      })
      expect(keepNothing.status).toBe(400)
      expect(problem(keepNothing)).toContain("/headers/x-api-key")

      // One namespace across kinds: a tool group cannot take a backend's id.
      const taken = yield* api.post("/api/v1/tool-groups", {
        id: "alpha",
        members: [{ endpoint: "alpha", tool: "echo" }]
      })
      expect(taken.status).toBe(409)
      expect(taken.body).toMatchObject({ error: "id_taken" })
      const missing = yield* api.post("/api/v1/tool-groups", {
        id: "g1",
        members: [{ endpoint: "nowhere", tool: "x" }]
      })
      expect(missing.status).toBe(400)
      expect(problem(missing)).toContain('/members/0/endpoint: no backend, HTTP tool or OpenAPI import "nowhere"')
      // HTTP tools pass the save-time checks of src/sources/http/check.ts: no expression before the path.
      const tool = yield* api.post("/api/v1/http-tools", {
        id: "weather",
        tool: { name: "forecast", method: "GET", url: "https://{host}/forecast/{city}" }
      })
      expect(tool.status).toBe(400)
      expect(problem(tool)).toContain("/tool/url")
      // …and the endpoint's fixed headers: no framing header, no CR/LF in a value (never echoed).
      const framing = yield* api.post("/api/v1/http-tools", {
        id: "weather",
        headers: { "Content-Length": "1", "X-Key": "split\r\nInjected: yes" },
        tool: { name: "forecast", method: "GET", url: "https://api.example.com/forecast/{city}" }
      })
      expect(framing.status).toBe(400)
      expect(problem(framing)).toContain("/headers/Content-Length: content-length is set by the gateway")
      expect(problem(framing)).toContain("/headers/X-Key: the value must be printable ASCII")
      expect(JSON.stringify(framing.body)).not.toContain("Injected")
      // …and its credentials become a header: a bearer token with a newline is refused, never echoed.
      const credentials = yield* api.post("/api/v1/http-tools", {
        id: "weather",
        credentials: { type: "bearer", token: "abc\nInjected: yes" },
        tool: { name: "forecast", method: "GET", url: "https://api.example.com/forecast/{city}" }
      })
      expect(credentials.status).toBe(400)
      expect(problem(credentials)).toContain("/credentials/token: must be a bearer token")
      expect(JSON.stringify(credentials.body)).not.toContain("Injected")
      // A managed backend's the same, by the YAML's rule.
      const backendToken = yield* api.post("/api/v1/backends", {
        id: "beta",
        url: "https://beta.example.com/mcp",
        credentials: { type: "basic", username: "svc", password: "pa\r\nss" }
      })
      expect(backendToken.status).toBe(400)
      expect(problem(backendToken)).toContain("credentials.password: must not contain a control character")
      // OpenAPI imports: up to 32 MiB on that route only; the document goes to the importer, whose
      // refusal names the place at fault; derived keys cannot be sent.
      const document = {
        openapi: "3.0.3",
        info: { title: "t", description: "x".repeat(2 * 1024 * 1024), version: "1" },
        paths: { "/pets": { get: { responses: "none" } } }
      }
      const imported = yield* api.post("/api/v1/openapi-imports", { id: "petstore", source: { document } })
      expect(imported.status).toBe(400)
      expect(problem(imported)).toContain("/paths/~1pets/get/responses")
      const derived = yield* api.post("/api/v1/openapi-imports", { id: "petstore", source: { document }, tools: [] })
      expect(derived.status).toBe(400)
      expect(problem(derived)).toContain("tools")
      const tooBig = yield* api.post("/api/v1/openapi-imports", {
        id: "p",
        source: { document: "x".repeat(33 * 1024 * 1024) }
      })
      expect(tooBig.status).toBe(413)
      expect((yield* api.get("/api/v1/backends")).body).toMatchObject({ managed: false })

      // A backend a tool group uses cannot be deleted.
      const group = yield* api.post("/api/v1/tool-groups", { id: "g1", members: [{ endpoint: "alpha", tool: "echo" }] })
      expect(group.status).toBe(201)
      const alphaRecord = yield* api.get("/api/v1/backends/alpha")
      const inUse = yield* api.send("DELETE", "/api/v1/backends/alpha", undefined, ifMatch(alphaRecord.body))
      expect(inUse.status).toBe(409)
      expect(inUse.body).toMatchObject({ error: "in_use" })
      expect(problem(inUse)).toContain('"g1"')
      // Kinds do not mix: a tool group is not found among backends.
      expect((yield* api.get("/api/v1/backends/g1")).status).toBe(404)
    })
  )
})
