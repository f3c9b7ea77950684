/**
 * docs/console.md, "Tool sources, approvals and audit" — the console's tool-source and proposal pages,
 * each route run in a real in-process gateway with real MCP backends, on both stores: lists with an
 * empty store and with data, a record with its definition (secrets only as configured) and published
 * tools, create / change / delete forms with the revision read (412 when stale), precise 400s, 404s,
 * hostile text escaped, and with configuration review on the proposal and its review link instead.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { proposalsSection } from "../../../src/admin/console/pages/proposals.js"
import { toolSourcesSection } from "../../../src/admin/console/pages/tool-sources.js"
import type { ConsoleAnswer, ConsoleProblem, ConsoleRoute } from "../../../src/admin/console/route.js"
import { sourceWrites } from "../../../src/sources/writes.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { storeKinds } from "../../support/databases.js"
import { inGeneration, type OAuthGateway, oauthGateway } from "../../support/oauth-gateway.js"
import { backendServer, mcpUser } from "../../support/tool-source-gateway.js"

const SECRET = "header-secret-value-0123456789"
const HOSTILE = `<script>alert("x")</script>&'`
const DESCRIPTION = `${HOSTILE}\u202e\u{f0000}`

const unescapeHtml = (text: string) =>
  text
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&")

const routeOf = (method: "GET" | "POST", path: string): ConsoleRoute => {
  const found = [...toolSourcesSection.routes, ...proposalsSection.routes].find(
    (route) => route.method === method && route.path === path
  )
  if (found === undefined) throw new Error(`no route ${method} ${path}`)
  return found
}

type Answer = ConsoleAnswer | ConsoleProblem

const bodyOf = (answer: Answer) => {
  if (answer._tag !== "Page") throw new Error(`expected a page, got ${JSON.stringify(answer)}`)
  return answer.body.text
}

/** Runs one route as the built-in administrator. */
const consoleOf = (gateway: OAuthGateway) =>
  Effect.map(builtinAdmin(gateway), (admin) => ({
    get: (path: string, params: Record<string, string> = {}, query = "") =>
      runConsoleRoute(
        gateway,
        routeOf("GET", path),
        consoleRequest(admin, { params, query: new URLSearchParams(query) })
      ),
    post: (path: string, params: Record<string, string>, form: Record<string, string>) =>
      runConsoleRoute(
        gateway,
        routeOf("POST", path),
        consoleRequest(admin, { params, form: new URLSearchParams(form) })
      )
  }))

const backendDefinition = (id: string, url: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id,
    url,
    allow_insecure_http: true,
    tool_rules: [{ tools: ["echo"] }, { tools: ["search"], write: true }],
    headers: { "x-api-key": SECRET },
    ...extra
  })

describe.each(storeKinds)("console: tool sources (%s)", (kind) => {
  it.scopedLive("every list page, with its create form, renders with an empty store", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway({ kind })
      const pages = yield* consoleOf(gateway)
      for (const path of [
        "/console/backends",
        "/console/tool-groups",
        "/console/http-tools",
        "/console/openapi-imports"
      ]) {
        const body = bodyOf(yield* pages.get(path))
        expect(body).toContain('id="empty"')
        expect(body).toContain('id="not-managed"')
        const form = body
        expect(form).toContain(`<form method="post" action="${path}">`)
        expect(form).toContain('name="csrf" value="test-csrf"')
        expect(form).toMatch(/<label for="definition">[^<]+<\/label>\s*<textarea id="definition" name="definition"/)
      }
      const proposals = bodyOf(yield* pages.get("/console/proposals"))
      expect(proposals).toContain('id="no-proposals"')
    })
  )

  it.scopedLive(
    "create, show (definition masked, published tools read/write), change with the revision read, delete; 412, 400, 404",
    () =>
      Effect.gen(function* () {
        const alpha = yield* backendServer("alpha")
        const beta = yield* backendServer("beta")
        const gateway = yield* oauthGateway({
          kind,
          patch: {
            backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, tool_rules: [{ tools: ["echo"] }] }]
          }
        })
        const pages = yield* consoleOf(gateway)
        const toolNames = yield* mcpUser(gateway, ["alpha", "beta", "g1"])

        const listed = bodyOf(yield* pages.get("/console/backends"))
        expect(listed).toContain('<a href="/console/backends/alpha">alpha</a>')
        expect(listed).toContain('id="not-managed"')

        const created = yield* pages.post("/console/backends", {}, { definition: backendDefinition("beta", beta.url) })
        expect(created).toEqual({ _tag: "SeeOther", location: "/console/backends/beta", notice: "Backend created." })
        // A write tool is listed only to callers granted writes; the console lists it as such below.
        expect(yield* toolNames).toEqual(["alpha__echo", "beta__echo"])

        const shown = bodyOf(yield* pages.get("/console/backends/:id", { id: "beta" }))
        expect(shown).not.toContain(SECRET)
        expect(shown).toContain("&quot;configured&quot;: true")
        expect(shown).toMatch(
          /<th scope="row"><code>beta__echo<\/code><\/th><td><code>echo<\/code><\/td>\s*<td>read<\/td>/
        )
        expect(shown).toMatch(
          /<th scope="row"><code>beta__search<\/code><\/th><td><code>search<\/code><\/td>\s*<td>write<\/td>/
        )
        expect(shown).toContain('<input type="hidden" name="revision" value="1">')
        expect(bodyOf(yield* pages.get("/console/backends"))).not.toContain('id="not-managed"')

        // The change form starts from the definition as read: {"configured": true} keeps the secret.
        const changed = JSON.stringify({
          id: "beta",
          url: beta.url,
          allow_insecure_http: true,
          tool_rules: [{ tools: ["echo"] }],
          headers: { "x-api-key": { configured: true } }
        })
        const saved = yield* pages.post("/console/backends/:id", { id: "beta" }, { revision: "1", definition: changed })
        expect(saved).toEqual({ _tag: "SeeOther", location: "/console/backends/beta", notice: "Backend saved." })
        expect(yield* toolNames).toEqual(["alpha__echo", "beta__echo"])
        expect(bodyOf(yield* pages.get("/console/backends/:id", { id: "beta" }))).not.toContain("beta__search")

        // A form rendered before that change: 412, nothing overwritten.
        const stale = yield* pages.post("/console/backends/:id", { id: "beta" }, { revision: "1", definition: changed })
        expect(stale).toMatchObject({ _tag: "ConsoleProblem", status: 412 })
        expect((stale as ConsoleProblem).message).toContain('its revision is now "2"')
        const staleDelete = yield* pages.post("/console/backends/:id/delete", { id: "beta" }, { revision: "1" })
        expect(staleDelete).toMatchObject({ _tag: "ConsoleProblem", status: 412 })

        // Bad input: named precisely, nothing written.
        const cases: ReadonlyArray<[Record<string, string>, number, string]> = [
          [{ revision: "2", definition: "{not json" }, 400, "definition: not valid JSON"],
          [{ revision: "2", definition: "[1]" }, 400, "definition: must be a JSON object"],
          [{ revision: "2", definition: "" }, 400, "definition: required"],
          [{ revision: "2", definition: '{"id":"beta","url":"\\u0000"}' }, 400, "NUL"],
          [{ revision: "two", definition: changed }, 400, "revision:"],
          [{ revision: "2", definition: JSON.stringify({ ...JSON.parse(changed), timeouts: 5 }) }, 400, "timeouts"],
          [{ revision: "2", definition: JSON.stringify({ ...JSON.parse(changed), id: "gamma" }) }, 400, "id:"],
          // The stored secret does not follow a changed url: the form must send it again.
          [
            { revision: "2", definition: JSON.stringify({ ...JSON.parse(changed), url: alpha.url }) },
            400,
            "/headers/x-api-key: url changed where this secret is sent, so the stored secret is not kept; send its value again"
          ]
        ]
        for (const [form, status, message] of cases) {
          const answer = yield* pages.post("/console/backends/:id", { id: "beta" }, form)
          expect(answer).toMatchObject({ _tag: "ConsoleProblem", status })
          expect((answer as ConsoleProblem).message).toContain(message)
        }
        const secretInJson = yield* pages.post(
          "/console/backends/:id",
          { id: "beta" },
          { revision: "2", definition: `{"headers": {"x": "${SECRET}"` }
        )
        expect((secretInJson as ConsoleProblem).message).not.toContain(SECRET)
        // An OpenAPI document the importer refuses: the API's message, naming the JSON Pointer at fault.
        const badDocument = yield* pages.post(
          "/console/openapi-imports",
          {},
          {
            definition: JSON.stringify({
              id: "pets",
              server_url: "https://api.example.com",
              source: {
                document: {
                  openapi: "3.0.3",
                  info: { title: "x", version: "1" },
                  paths: { "/p": { get: { responses: 5 } } }
                }
              }
            })
          }
        )
        expect(badDocument).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
        expect((badDocument as ConsoleProblem).message).toMatch(/^source: \/paths/)
        const taken = yield* pages.post("/console/backends", {}, { definition: backendDefinition("alpha", alpha.url) })
        expect(taken).toMatchObject({ _tag: "ConsoleProblem", status: 409 })

        expect(yield* pages.get("/console/backends/:id", { id: "nowhere" })).toMatchObject({
          _tag: "ConsoleProblem",
          status: 404
        })
        expect(
          yield* pages.post("/console/backends/:id", { id: "nowhere" }, { revision: "1", definition: changed })
        ).toMatchObject({ _tag: "ConsoleProblem", status: 404 })

        // A tool group: hostile text in its description is escaped; its catalog lists its members.
        const group = yield* pages.post(
          "/console/tool-groups",
          {},
          {
            definition: JSON.stringify({
              id: "g1",
              description: DESCRIPTION,
              members: [{ endpoint: "beta", tool: "echo" }]
            })
          }
        )
        expect(group).toMatchObject({ _tag: "SeeOther", location: "/console/tool-groups/g1" })
        const groupPage = bodyOf(yield* pages.get("/console/tool-groups/:id", { id: "g1" }))
        expect(groupPage).not.toContain("<script>")
        expect(groupPage).toContain("&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt;&amp;&#39;")
        expect(groupPage).toMatch(/<code>g1__echo<\/code><\/th><td><code>echo<\/code><\/td>/)
        // Hidden characters: visible in the definition and escaped in the change form, whose text saved
        // unchanged stores exactly the same description.
        expect(groupPage).not.toMatch(/[\u202e\u{f0000}]/u)
        // Above U+FFFF a surrogate pair of escapes, as JSON writes it (`\uf0000` would read as U+F000 and "0").
        expect(groupPage).toContain("\\u202e\\udb80\\udc00")
        const formText = unescapeHtml(/<textarea id="definition"[^>]*>([\s\S]*?)<\/textarea>/.exec(groupPage)![1]!)
        expect(formText).toContain("\\u202e\\udb80\\udc00")
        const resaved = yield* pages.post(
          "/console/tool-groups/:id",
          { id: "g1" },
          { revision: "1", definition: formText }
        )
        expect(resaved).toMatchObject({ _tag: "SeeOther", location: "/console/tool-groups/g1" })
        const stored = yield* inGeneration(gateway)(
          Effect.flatMap(sourceWrites("tool_group"), (writes) => writes.read("g1"))
        )
        expect(stored).toMatchObject({ revision: "2", definition: { description: DESCRIPTION } })
        const inUse = yield* pages.post("/console/backends/:id/delete", { id: "beta" }, { revision: "2" })
        expect(inUse).toMatchObject({ _tag: "ConsoleProblem", status: 409 })

        expect(yield* pages.post("/console/tool-groups/:id/delete", { id: "g1" }, { revision: "2" })).toMatchObject({
          _tag: "SeeOther",
          location: "/console/tool-groups"
        })
        const deleted = yield* pages.post("/console/backends/:id/delete", { id: "beta" }, { revision: "2" })
        expect(deleted).toMatchObject({ _tag: "SeeOther", location: "/console/backends" })
        expect(yield* toolNames).toEqual(["alpha__echo"])
        expect(bodyOf(yield* pages.get("/console/backends"))).not.toContain("/console/backends/beta")
      })
  )

  it.scopedLive(
    "with configuration review on, a create shows the pending proposal, its diff (secrets masked) and its review link; nothing is active",
    () =>
      Effect.gen(function* () {
        const beta = yield* backendServer("beta")
        const gateway = yield* oauthGateway({
          kind,
          patch: { admin: { approvals: { policy_changes: { enabled: true } } } }
        })
        const pages = yield* consoleOf(gateway)
        const toolNames = yield* mcpUser(gateway, ["beta"])
        const answer = yield* pages.post("/console/backends", {}, { definition: backendDefinition("beta", beta.url) })
        expect(answer).toMatchObject({
          _tag: "SeeOther",
          location: expect.stringMatching(/^\/console\/proposals\/[\w-]+$/)
        })
        const id = (answer as { location: string }).location.split("/").at(-1)!
        expect(yield* toolNames).toEqual([])
        expect(bodyOf(yield* pages.get("/console/backends"))).toContain('id="empty"')

        const proposal = bodyOf(yield* pages.get("/console/proposals/:id", { id }))
        expect(proposal).toContain(`href="${gateway.baseUrl}/auth/login?role=security&amp;proposal=${id}"`)
        expect(proposal).toContain('data-state="pending_approval"')
        expect(proposal).toContain("<code>/url</code>")
        expect(proposal).toContain("<code>/headers/x-api-key</code>")
        expect(proposal).not.toContain(SECRET)
        expect(proposal).not.toMatch(/<form[^>]*method="post"/)

        const list = bodyOf(yield* pages.get("/console/proposals", {}, "state=pending_approval"))
        expect(list).toContain(`<a href="/console/proposals/${id}">Create backend <code>beta</code></a>`)
        expect(bodyOf(yield* pages.get("/console/proposals", {}, "state=applied"))).toContain('id="no-proposals"')
        const bad = yield* pages.get("/console/proposals", {}, "state=<x>")
        expect(bad).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
        expect((bad as ConsoleProblem).message).toContain("state:")
        expect(yield* pages.get("/console/proposals/:id", { id: "no-such" })).toMatchObject({
          _tag: "ConsoleProblem",
          status: 404
        })
      })
  )
})
