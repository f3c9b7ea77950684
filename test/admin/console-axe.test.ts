/**
 * Accessibility of every console page (docs/console.md, "Accessibility"), in Chromium under the pages'
 * own CSP: axe-core finds no serious or critical violation on the overview and every GET page of the
 * sections registry (in an empty store, and again with data), on every page with a path parameter (a
 * person, a permission group, the built-in group, an organization group, a tool source of each kind, a
 * pending and an applied proposal), on the pages a form answers (a new local account's link, a reset's
 * link) and on the refusal pages (403, 404, 412, 413). The skip link is the first thing Tab reaches,
 * and following it moves the focus to `main`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option } from "effect"
import type { Page } from "playwright-core"
import { PolicyWrites } from "../../src/policy/writes.js"
import { ConfigChanges } from "../../src/sources/changes.js"
import type { SourceKind } from "../../src/sources/schema.js"
import { sourceWrites } from "../../src/sources/writes.js"
import { GroupRepo } from "../../src/store/groups.js"
import { UserRepo } from "../../src/store/users.js"
import { seriousViolations } from "../support/axe.js"
import { launchChromium, watchedBrowsers } from "../support/browser.js"
import { consolePagePaths, consoleSignIn, remoteConsole } from "../support/console.js"
import { createGroup, testActor } from "../support/grants.js"
import { ADMIN_PASSWORD, inGateway, inGeneration, oauthGateway } from "../support/oauth-gateway.js"
import { backendServer } from "../support/tool-source-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

const chromiumBrowser = Effect.acquireRelease(promise(launchChromium), (browser) => promise(() => browser.close()))

/** The element that has the focus: its tag and id (or class). */
const focused = (page: Page) =>
  page.evaluate(() => {
    const active = (
      globalThis as unknown as {
        document: { activeElement: { tagName: string; id: string; className: string } | null }
      }
    ).document.activeElement
    return active === null ? "" : `${active.tagName.toLowerCase()}#${active.id || active.className}`
  })

/** axe on the page as it is now; findings are collected under `name`. */
const axeInto = (findings: Record<string, unknown>) => async (page: Page, name: string) => {
  const found = await seriousViolations(page)
  if (found.length > 0) findings[name] = found
}

/** Clicks a submit button and waits for the page it leads to; its status. */
const submit = async (page: Page, selector: string) => {
  const [response] = await Promise.all([page.waitForNavigation(), page.click(selector)])
  return response?.status()
}

describe("the console's pages are accessible", () => {
  it.scopedLive("axe-core: no serious or critical violation on any page without path parameters", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway(remoteConsole())
      const chromium = yield* chromiumBrowser
      const { problems, open } = watchedBrowsers(chromium)
      const { page } = yield* promise(open)
      yield* promise(() => consoleSignIn(page, gateway.adminUrl, "admin", ADMIN_PASSWORD, new Map()))
      const findings: Record<string, unknown> = {}
      for (const path of new Set(consolePagePaths)) {
        const response = yield* promise(() => page.goto(gateway.adminUrl + path))
        expect(response?.status(), path).toBe(200)
        const found = yield* promise(() => seriousViolations(page))
        if (found.length > 0) findings[path] = found
      }
      // The layout's error pages too: a 404 inside the console.
      yield* promise(() => page.goto(`${gateway.adminUrl}/console/no-such-page`))
      const notFound = yield* promise(() => seriousViolations(page))
      if (notFound.length > 0) findings["404"] = notFound
      expect(findings).toEqual({})
      // The runner does see violations: a field without a label is one.
      yield* promise(() => page.setContent("<!doctype html><html lang=en><title>t</title><main><input></main></html>"))
      expect((yield* promise(() => seriousViolations(page))).map((finding) => finding.rule)).toContain("label")
      expect(problems).toEqual({ csp: [], dialogs: [], errors: [] })
    })
  )

  it.scopedLive(
    "axe-core on every page with data: records by id, form answers, 403, 404, 412 and 413; the skip link moves the focus to main",
    () =>
      Effect.gen(function* () {
        const alpha = yield* backendServer("alpha")
        const beta = yield* backendServer("beta")
        const gateway = yield* oauthGateway(
          remoteConsole({
            patch: {
              backends: [
                {
                  id: "alpha",
                  url: alpha.url,
                  allow_insecure_http: true,
                  required: true,
                  tool_rules: [{ tools: ["*"] }]
                }
              ],
              admin: { approvals: { policy_changes: { enabled: true } } }
            }
          })
        )
        const adminUrl = gateway.adminUrl

        // Data: a permission group granting a tool, an organization group, a tool source of each kind
        // (each proposed and approved by another person: configuration review is on), and a pending
        // proposal with a diff.
        const data = yield* inGeneration(gateway)(
          Effect.gen(function* () {
            const admin = Option.getOrThrow(yield* (yield* UserRepo).findBuiltinAdmin)
            const permission = yield* createGroup([{ endpoint_id: "alpha", tools: ["echo"] }])
            const groups = yield* GroupRepo
            const now = new Date(yield* Clock.currentTimeMillis)
            const [organization] = yield* groups.upsertOrganizationGroups(
              "oidc:https://login.example.com",
              "group",
              [{ externalId: "eng", name: "Engineering" }],
              now
            )
            const builtin = (yield* groups.list).find((group) => group.builtin !== null)!
            const changes = yield* ConfigChanges
            const reviewer = { user_id: "reviewer-1", name: "Rita Reviewer" }
            const actor = { userId: admin.id, requestId: "axe-test" }
            const propose = (kind: SourceKind, definition: Record<string, unknown>) =>
              Effect.gen(function* () {
                const written = yield* (yield* sourceWrites(kind)).create(definition, actor).pipe(Effect.orDie)
                if (!("approval_id" in written)) return yield* Effect.dieMessage("expected a proposal")
                return written.approval_id
              })
            const sources: Record<SourceKind, Record<string, unknown>> = {
              backend: { id: "beta", url: beta.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] },
              tool_group: { id: "g1", description: "Echo from beta", members: [{ endpoint: "beta", tool: "echo" }] },
              http_tool: {
                id: "weather",
                tool: { name: "forecast", method: "GET", url: "https://api.example.com/forecast/{city}" }
              },
              openapi_import: {
                id: "pets",
                server_url: "https://api.example.com",
                source: {
                  document: {
                    openapi: "3.0.3",
                    info: { title: "Pets", version: "1" },
                    paths: {
                      "/pets": { get: { operationId: "listPets", responses: { "200": { description: "ok" } } } }
                    }
                  }
                }
              }
            }
            let applied = ""
            for (const [kind, definition] of Object.entries(sources) as Array<[SourceKind, Record<string, unknown>]>) {
              applied = yield* propose(kind, definition)
              yield* changes.approve(applied, reviewer).pipe(Effect.orDie)
            }
            const betaRecord = yield* (yield* sourceWrites("backend")).read("beta").pipe(Effect.orDie)
            const pending = yield* (yield* sourceWrites("backend"))
              .update(
                "beta",
                Number(betaRecord.revision),
                { ...sources.backend, tool_rules: [{ tools: ["echo"] }] },
                actor
              )
              .pipe(Effect.orDie)
            if (!("approval_id" in pending)) return yield* Effect.dieMessage("expected a proposal")
            return {
              adminId: admin.id,
              permission,
              organization: organization!,
              builtin: builtin.id,
              applied,
              pending: pending.approval_id
            }
          })
        )

        const chromium = yield* chromiumBrowser
        const { problems, open } = watchedBrowsers(chromium)
        const { page } = yield* promise(open)
        yield* promise(() => consoleSignIn(page, adminUrl, "admin", ADMIN_PASSWORD, new Map()))
        const findings: Record<string, unknown> = {}
        const axe = axeInto(findings)

        // Keyboard: the skip link is the first thing Tab reaches; following it puts the focus on main,
        // and the next Tab reaches main's first field, past the navigation and the sign-out button.
        yield* promise(async () => {
          await page.goto(`${adminUrl}/console/groups`)
          await page.keyboard.press("Tab")
          expect(await focused(page)).toBe("a#skip")
          expect(await page.textContent(":focus")).toBe("Skip to content")
          await page.keyboard.press("Enter")
          expect(await focused(page)).toBe("main#main")
          await page.keyboard.press("Tab")
          expect(await focused(page)).toBe("input#new-group-name")
        })

        // A local account made through its form: the page with its link, then a reset's.
        yield* promise(async () => {
          await page.goto(`${adminUrl}/console/local-accounts`)
          await page.fill("#username", "lena")
          await page.fill("#display_name", "Lena Berg")
          expect(await submit(page, "button:text-is('Create and get the enrolment link')")).toBe(200)
          expect(await page.textContent("h1")).toBe("Local account created")
          await axe(page, "local account created (its link)")
          await page.goto(`${adminUrl}/console/local-accounts`)
          expect(await submit(page, "button:text-is('Reset password of lena')")).toBe(200)
          expect(await page.textContent("h1")).toBe("Password reset")
          await axe(page, "password reset (its link)")
        })
        const lenaId = yield* inGateway(gateway)(
          Effect.map(
            Effect.flatMap(UserRepo, (users) => users.findLocalByUsername("lena")),
            (found) => Option.getOrThrow(found).id
          )
        )

        // Every page without parameters, now with data in it.
        for (const path of consolePagePaths) {
          const response = yield* promise(() => page.goto(adminUrl + path))
          expect(response?.status(), path).toBe(200)
          yield* promise(() => axe(page, `${path} (with data)`))
        }

        const byId = [
          `/console/identities/${data.adminId}`,
          `/console/identities/${lenaId}`,
          `/console/groups/${data.permission}`,
          `/console/groups/${data.builtin}`,
          `/console/groups/${data.organization}`,
          "/console/backends/alpha",
          "/console/backends/beta",
          "/console/tool-groups/g1",
          "/console/http-tools/weather",
          "/console/openapi-imports/pets",
          `/console/proposals/${data.applied}`,
          `/console/proposals/${data.pending}`
        ]
        for (const path of byId) {
          const response = yield* promise(() => page.goto(adminUrl + path))
          expect(response?.status(), path).toBe(200)
          yield* promise(() => axe(page, path))
        }
        // The pending proposal shows its diff; the backend its published tools.
        yield* promise(async () => {
          await page.goto(`${adminUrl}/console/proposals/${data.pending}`)
          expect(await page.textContent("#diff")).toContain("/tool_rules")
        })

        // The refusal pages: 404, 403 (a form whose CSRF field is gone), 412 (a stale form), 413.
        yield* promise(async () => {
          expect((await page.goto(`${adminUrl}/console/identities/no-such-person`))?.status()).toBe(404)
          await axe(page, "404 (no such person)")
          expect((await page.goto(`${adminUrl}/console/nowhere`))?.status()).toBe(404)
          await axe(page, "404 (no such page)")

          await page.goto(`${adminUrl}/console/groups/${data.permission}`)
          await page.evaluate(() => {
            const scope = globalThis as unknown as {
              document: { querySelectorAll: (s: string) => Array<{ remove: () => void }> }
            }
            for (const field of scope.document.querySelectorAll("main input[name=csrf]")) field.remove()
          })
          expect(await submit(page, "main button[type=submit]")).toBe(403)
          expect(await page.textContent("h1")).toBe("Refused")
          await axe(page, "403 (no CSRF token)")
        })
        yield* promise(() => page.goto(`${adminUrl}/console/groups/${data.permission}`))
        yield* inGateway(gateway)(
          Effect.gen(function* () {
            const group = (yield* (yield* GroupRepo).find(data.permission))!
            yield* (yield* PolicyWrites).updateGroup(testActor, data.permission, group.revision, { enabled: false })
          })
        )
        yield* promise(async () => {
          expect(await submit(page, "main button[type=submit]")).toBe(412)
          expect(await page.textContent("h1")).toBe("The record changed")
          await axe(page, "412 (a stale form)")

          await page.goto(`${adminUrl}/console/openapi-imports`)
          await page.evaluate(() => {
            const scope = globalThis as unknown as {
              document: { querySelector: (s: string) => { value: string } }
            }
            scope.document.querySelector("#definition").value = `{"id": "big", "x": "${"x".repeat(4 * 1024 * 1024)}"}`
          })
          expect(await submit(page, "button:text-is('Create')")).toBe(413)
          expect(await page.textContent("h1")).toBe("Too large")
          await axe(page, "413 (a form over the limit)")
        })

        expect(findings).toEqual({})
        expect(problems).toEqual({ csp: [], dialogs: [], errors: [] })
      }),
    120_000
  )
})
