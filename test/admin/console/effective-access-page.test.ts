/**
 * A person's effective access in the console (docs/console.md, "Identities and access"): the
 * Management API's explanation, per published tool of a real backend, allowed or denied and why.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { consoleSections } from "../../../src/admin/console/pages/index.js"
import { ConsoleProblem } from "../../../src/admin/console/route.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { grantAccess } from "../../support/grants.js"
import { alphaTools, startBackend } from "../../support/mcp-backends.js"
import { inGateway, oauthGateway } from "../../support/oauth-gateway.js"

const personPage = consoleSections
  .flatMap((section) => section.routes)
  .find((route) => route.method === "GET" && route.path === "/console/identities/:id")!

describe("console: effective access", () => {
  it.scopedLive("shows, per published tool, allow or deny, the deciding group and the reason", () =>
    Effect.gen(function* () {
      const alpha = yield* Effect.acquireRelease(
        Effect.promise(() => startBackend("alpha", alphaTools)),
        (backend) => Effect.promise(() => backend.stop())
      )
      const gateway = yield* oauthGateway({
        patch: {
          backends: [
            {
              id: "alpha",
              url: alpha.url,
              allow_insecure_http: true,
              tool_rules: [{ tools: ["echo", "search", "slow"] }, { tools: ["write_note"], write: true }]
            }
          ]
        }
      })
      const admin = yield* builtinAdmin(gateway)
      const { userId } = yield* inGateway(gateway)(
        grantAccess([
          {
            endpoint_id: "alpha",
            tools: ["search", "write_note"],
            resource_rules: [{ argument: "/q", allowed_values: ["<b>bold</b>"] }]
          }
        ])
      )
      const answer = yield* runConsoleRoute(gateway, personPage, consoleRequest(admin, { params: { id: userId } }))
      if (answer instanceof ConsoleProblem || answer._tag !== "Page") throw new Error("expected a page")
      const page = answer.body.text
      expect(page).toContain('<h2 id="access-heading">Effective access</h2>')
      expect(page).toMatch(/<caption>1 of \d+ published tools allowed<\/caption>/)
      expect(page).toContain('<th scope="col">Decision</th>')
      const row = (tool: string) => {
        const start = page.indexOf(`<code>alpha__${tool}</code>`)
        expect(start).toBeGreaterThan(0)
        return page.slice(start, page.indexOf("</tr>", start))
      }
      expect(row("search")).toContain("<strong>Allowed</strong>")
      expect(row("search")).toMatch(/Allowed by group-[0-9a-f]+ \(direct member\), naming the tool by name\./)
      // A condition's value is escaped like every other stored text.
      expect(row("search")).toContain("/q ∈ {&lt;b&gt;bold&lt;/b&gt;}")
      expect(row("echo")).toContain("<strong>Denied</strong>")
      expect(row("echo")).toContain("No group of theirs has an access entry naming this tool.")
      expect(row("write_note")).toContain("write")
      expect(row("write_note")).toContain("without allowing write requests")
    })
  )
})
