/**
 * The console's local accounts page (src/admin/console/pages/local-accounts.ts; docs/local-accounts.md):
 * its routes run as the console's core runs them, in the generation serving now, on SQLite and
 * PostgreSQL — the list, the create form showing the enrolment link once, and the buttons, which carry
 * the revision they were rendered with: a stale one is a 412 problem, never a silent overwrite.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { consoleSections } from "../../../src/admin/console/pages/index.js"
import { localAccountsSection } from "../../../src/admin/console/pages/local-accounts.js"
import { type ConsoleAnswer, ConsoleProblem, type ConsoleRoute } from "../../../src/admin/console/route.js"
import { builtinAdmin, consoleRequest, runConsoleRoute } from "../../support/console-request.js"
import { storeKinds } from "../../support/databases.js"
import { enrolThroughLink } from "../../support/enrolment.js"
import { oauthGateway } from "../../support/oauth-gateway.js"

const route = (method: "GET" | "POST", path: string): ConsoleRoute => {
  const found = localAccountsSection.routes.find((each) => each.method === method && each.path === path)
  if (found === undefined) throw new Error(`no route ${method} ${path}`)
  return found
}

const bodyOf = (answer: ConsoleAnswer | ConsoleProblem) => {
  if (answer instanceof ConsoleProblem || answer._tag !== "Page")
    throw new Error(`expected a page: ${JSON.stringify(answer)}`)
  return answer.body.text
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields)

describe.each(storeKinds)("console: local accounts (%s)", (kind) => {
  it.scoped("lists, creates with the link shown once, and acts with the revision the form carried", () =>
    Effect.gen(function* () {
      expect(consoleSections).toContain(localAccountsSection)
      const gateway = yield* oauthGateway({ kind })
      const admin = yield* builtinAdmin(gateway)
      const run = (method: "GET" | "POST", path: string, fields: Partial<Parameters<typeof consoleRequest>[1]> = {}) =>
        runConsoleRoute(gateway, route(method, path), consoleRequest(admin, fields))

      const empty = bodyOf(yield* run("GET", "/console/local-accounts"))
      expect(empty).toContain("No local accounts yet.")
      expect(empty).toContain('name="csrf"')
      expect(empty).toContain('<label for="username">User name</label>')

      const created = bodyOf(
        yield* run("POST", "/console/local-accounts", { form: form({ username: "Jane", display_name: "Jane <Doe>" }) })
      )
      const link = /value="(http:\/\/[^"]+\/sso\/enrol\?token=[A-Za-z0-9_-]{43})"/.exec(created)?.[1]
      expect(link).toBeDefined()
      expect(created).toContain("Jane &lt;Doe&gt;")

      const listed = bodyOf(yield* run("GET", "/console/local-accounts"))
      expect(listed).toContain("Waiting for enrolment")
      expect(listed).not.toContain(new URL(link!).searchParams.get("token")!)
      const id = /action="\/console\/local-accounts\/([^/"]+)\/disable"/.exec(listed)?.[1]
      expect(id).toBeDefined()
      expect(listed).toContain('name="revision" value="1"')

      // Refusals: hostile and duplicate names, a missing field.
      const hostile = yield* run("POST", "/console/local-accounts", {
        form: form({ username: "ja\u200dne", display_name: "J" })
      })
      expect(hostile).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
      const taken = yield* run("POST", "/console/local-accounts", {
        form: form({ username: "JANE", display_name: "J" })
      })
      expect(taken).toMatchObject({ _tag: "ConsoleProblem", status: 409 })
      const missing = yield* run("POST", "/console/local-accounts", { form: form({ username: "kim" }) })
      expect(missing).toMatchObject({ _tag: "ConsoleProblem", status: 400, message: "display_name: give it once." })

      // The person enrols meanwhile: the row's revision moved, so the old form is stale.
      expect((yield* Effect.promise(() => enrolThroughLink(link!, "a long enough password", 0))).status).toBe(200)
      const stale = yield* run("POST", "/console/local-accounts/:id/disable", {
        params: { id: id! },
        form: form({ revision: "1" })
      })
      expect(stale).toMatchObject({ _tag: "ConsoleProblem", status: 412 })
      expect((stale as ConsoleProblem).message).toContain('its revision is now "2"')

      const disabled = yield* run("POST", "/console/local-accounts/:id/disable", {
        params: { id: id! },
        form: form({ revision: "2" })
      })
      expect(disabled).toMatchObject({
        _tag: "SeeOther",
        location: "/console/local-accounts",
        notice: "Jane disabled."
      })
      const afterDisable = bodyOf(yield* run("GET", "/console/local-accounts"))
      expect(afterDisable).toContain("Disabled")
      expect(afterDisable).toContain(`/console/local-accounts/${id}/enable`)
      const resetDisabled = yield* run("POST", "/console/local-accounts/:id/reset-password", {
        params: { id: id! },
        form: form({ revision: "3" })
      })
      expect(resetDisabled).toMatchObject({ _tag: "ConsoleProblem", status: 409 })
      const enabled = yield* run("POST", "/console/local-accounts/:id/enable", {
        params: { id: id! },
        form: form({ revision: "3" })
      })
      expect(enabled).toMatchObject({ _tag: "SeeOther", notice: "Jane enabled." })
      const reset = bodyOf(
        yield* run("POST", "/console/local-accounts/:id/reset-mfa", {
          params: { id: id! },
          form: form({ revision: "4" })
        })
      )
      expect(reset).toMatch(/\/sso\/enrol\?token=[A-Za-z0-9_-]{43}/)
      const badRevision = yield* run("POST", "/console/local-accounts/:id/enable", {
        params: { id: id! },
        form: form({ revision: "x" })
      })
      expect(badRevision).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
      const builtin = yield* run("POST", "/console/local-accounts/:id/disable", {
        params: { id: admin.userId },
        form: form({ revision: "1" })
      })
      expect(builtin).toMatchObject({ _tag: "ConsoleProblem", status: 400 })
    })
  )
})
