/**
 * The console end to end (docs/console.md, docs/local-accounts.md), in one Chromium through
 * playwright-core against a gateway in `admin.mode: remote` with a real MCP backend: the built-in
 * administrator signs in (password and TOTP), creates a local account and reads its enrolment link off
 * the page; the person, in a browser of their own, enrols (password and TOTP) and signs in through
 * /sso; the administrator creates a permission group granting one tool of the backend and adds the
 * person to it on the person's page; the person's MCP client then lists exactly that tool. Then the
 * refusals on that very page: a post without the CSRF token and one from a foreign origin (403 pages,
 * nothing changed), and a form made stale by another tab (412 page, nothing overwritten).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { base32Decode, totpAt } from "../../src/identity/local/totp.js"
import { callbackServer, launchChromium, watchedBrowsers } from "../support/browser.js"
import { consoleSignIn, csrfOf, remoteConsole } from "../support/console.js"
import { storeKinds } from "../support/databases.js"
import { LogCapture } from "../support/logs.js"
import { connectClient } from "../support/mcp-clients.js"
import { codeFlowPath, exchange } from "../support/oauth-client.js"
import { ADMIN_PASSWORD, oauthGateway } from "../support/oauth-gateway.js"
import { backendServer } from "../support/tool-source-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)
const PASSWORD = "lena's own long password"

/** Clicks the submit button named `label` and waits for the page it leads to. */
const submit = async (page: Page, label: string) => {
  const [response] = await Promise.all([
    page.waitForNavigation(),
    page.click(`button[type=submit]:text-is(${JSON.stringify(label)})`)
  ])
  return response?.status()
}

const mainText = async (page: Page) => (await page.textContent("main")) ?? ""

describe.each(storeKinds)("the console end to end (%s)", (kind) => {
  it.scopedLive(
    "an administrator creates an account, the person enrols and signs in, a group grants one tool, tools/list shows exactly it; CSRF, origin and stale forms are refused",
    () =>
      Effect.gen(function* () {
        const alpha = yield* backendServer("alpha")
        const callback = yield* callbackServer
        const logs = new LogCapture()
        const gateway = yield* oauthGateway(
          remoteConsole({
            kind,
            logs,
            patch: {
              backends: [
                {
                  id: "alpha",
                  url: alpha.url,
                  allow_insecure_http: true,
                  required: true,
                  tool_rules: [{ tools: ["*"] }]
                }
              ]
            }
          })
        )
        const chromium = yield* Effect.acquireRelease(promise(launchChromium), (browser) =>
          promise(() => browser.close())
        )
        const browsers = watchedBrowsers(chromium)
        const admin = yield* promise(browsers.open)
        const page = admin.page
        const adminUrl = gateway.adminUrl

        // 1. The built-in administrator signs in: password, then TOTP (enrolled on this first sign-in).
        yield* promise(() => consoleSignIn(page, adminUrl, "admin", ADMIN_PASSWORD, new Map()))
        expect(yield* promise(() => page.textContent("h1"))).toBe("Overview")

        // 2. Creates a local account on the local-accounts page and reads the enrolment link off it.
        const link = yield* promise(async () => {
          await page.click("nav a:text-is('Local accounts')")
          expect(await page.textContent("h1")).toBe("Local accounts")
          expect(await mainText(page)).toContain("No local accounts yet.")
          await page.fill("#username", "lena")
          await page.fill("#display_name", "Lena Berg")
          expect(await submit(page, "Create and get the enrolment link")).toBe(200)
          expect(await page.textContent("h1")).toBe("Local account created")
          expect(await mainText(page)).toContain("Give this link to Lena Berg")
          const url = await page.inputValue("#enrolment-url")
          expect(url).toMatch(new RegExp(`^${gateway.baseUrl}/sso/enrol\\?token=`))
          await page.click("text=Back to local accounts")
          expect(await page.textContent("table")).toContain("Waiting for enrolment")
          return url
        })

        // 3. The person, in a browser of their own, opens the link, sets a password and enrols TOTP.
        const person = yield* promise(browsers.open)
        const secret = yield* promise(async () => {
          const opened = await person.page.goto(link)
          expect(opened?.status()).toBe(200)
          expect(await person.page.title()).toBe("Set up your account")
          expect(await person.page.textContent("#enrol-username")).toBe("lena")
          const key = base32Decode((await person.page.textContent("#totp-secret")) ?? "")!
          expect(key.length).toBe(20)
          await person.page.fill("#password", PASSWORD)
          await person.page.fill("#password-again", PASSWORD)
          await person.page.fill("#code", totpAt(key, Date.now()))
          await person.page.click("button[type=submit]")
          expect(await person.page.textContent("h1")).toBe("Your account is ready")
          return key
        })
        // The administrator's list shows the account enabled now.
        yield* promise(async () => {
          await page.reload()
          expect(await page.textContent("table")).toContain("Enabled")
        })

        // 4. The person signs in through /sso for their MCP client: password, then the next step's code.
        const token = yield* promise(async () => {
          const redirectUri = `http://127.0.0.1:${callback.port}/callback`
          const { path, verifier } = codeFlowPath(redirectUri, {
            scope: "offline_access",
            state: "lena",
            resource: gateway.mcpUrl
          })
          await person.page.goto(gateway.baseUrl + path)
          await person.page.fill("#username", "lena")
          await person.page.fill("#password", PASSWORD)
          await person.page.click("button[type=submit]")
          await person.page.waitForSelector("form[action='/sso/mfa']")
          await person.page.fill("#code", totpAt(secret, Date.now() + 30_000))
          await Promise.all([person.page.waitForURL(`${redirectUri}?**`), person.page.click("button[type=submit]")])
          const landed = new URL(person.page.url())
          const tokens = await exchange(gateway.baseUrl, {
            code: landed.searchParams.get("code") ?? "",
            verifier,
            redirectUri,
            clientId: "cli",
            callback: landed.searchParams
          })
          expect(tokens.response.status).toBe(200)
          return tokens.body["access_token"] as string
        })
        const client = yield* Effect.acquireRelease(
          promise(() => connectClient(gateway.mcpUrl, token)),
          (connected) => promise(() => connected.close())
        )
        const toolNames = promise(async () => (await client.listTools()).tools.map((tool) => tool.name).sort())
        // Signed in, but granted nothing yet.
        expect(yield* toolNames).toEqual([])

        // 5. The administrator creates a permission group granting alpha's echo, through the group pages.
        const groupId = yield* promise(async () => {
          await page.click("nav a:text-is('Groups')")
          await page.fill("#new-group-name", "Echo users")
          await submit(page, "Create permission group")
          expect(await page.textContent("h1")).toBe("Echo users")
          expect(await page.textContent("[role=status]")).toBe("Created Echo users; give it permissions below.")
          await page.fill("#access-0-endpoint", "alpha")
          await page.fill("#access-0-tools", "echo")
          expect(await submit(page, "Save Echo users")).toBe(200)
          expect(await page.textContent("[role=status]")).toBe("Saved Echo users.")
          expect(await page.inputValue("#access-0-endpoint")).toBe("alpha")
          expect(await page.inputValue("#access-0-tools")).toBe("echo")
          const id = (await page.textContent("dt:text-is('Id') + dd code")) ?? ""
          expect(id).not.toBe("")
          return id
        })

        // 6. … and adds the person to it on the person's page, which then explains their access.
        const personUrl = yield* promise(async () => {
          await page.click("nav a:text-is('People')")
          await page.click("table a:text-is('Lena Berg')")
          expect(await page.textContent("h1")).toBe("Lena Berg")
          expect(await mainText(page)).toContain("Member of no group.")
          await page.fill("#add-group", groupId)
          expect(await submit(page, "Save access of Lena Berg")).toBe(200)
          expect(await page.textContent("[role=status]")).toBe("Saved Lena Berg.")
          expect(await page.textContent("table:has(caption:text('Groups of Lena Berg'))")).toContain("Echo users")
          const access = (await page.textContent("section[aria-labelledby=access-heading]")) ?? ""
          expect(access).toMatch(/\b1 of [0-9]+ published tools allowed/)
          const echoRow = (await page.textContent("tr:has(th code:text-is('alpha__echo'))")) ?? ""
          expect(echoRow).toContain("Allowed")
          expect(echoRow).toContain("Allowed by Echo users (direct member), naming the tool by name.")
          expect(await page.textContent("tr:has(th code:text-is('alpha__search'))")).toContain("Denied")
          return page.url()
        })

        // 7. The person's MCP client lists exactly that tool.
        expect(yield* toolNames).toEqual(["alpha__echo"])

        // 8. Forged posts to the person's page: no CSRF token, a foreign Origin. Both 403 pages; nothing changes.
        const csrf = yield* promise(() => csrfOf(page))
        const revision = yield* promise(() => page.inputValue("input[name=revision]"))
        const forge = (form: Record<string, string>, origin: string) =>
          promise(async () => {
            const answer = await admin.context.request.post(personUrl, { form, headers: { origin }, maxRedirects: 0 })
            return { status: answer.status(), text: await answer.text() }
          })
        // Unchecked "enabled" and no group: what a successful forgery would do is disable and strip them.
        const noToken = yield* forge({ revision }, adminUrl)
        expect(noToken.status).toBe(403)
        expect(noToken.text).toContain("<h1>Refused</h1>")
        expect(noToken.text).toContain("security token is missing or out of date; nothing was saved")
        const foreign = yield* forge({ revision, csrf }, "https://attacker.example")
        expect(foreign.status).toBe(403)
        expect(foreign.text).toContain("not sent from the console")
        expect(logs.events("console.csrf_refused").map((event) => event["reason"])).toEqual(["token", "origin"])
        yield* promise(async () => {
          await page.reload()
          expect(await page.isChecked("input[name=enabled]")).toBe(true)
          expect(await page.inputValue("input[name=revision]")).toBe(revision)
          expect(await page.textContent("table:has(caption:text('Groups of Lena Berg'))")).toContain("Echo users")
        })
        expect(yield* toolNames).toEqual(["alpha__echo"])

        // 9. A stale form: another tab removes the group; this tab, opened before, tries to disable the person.
        yield* promise(async () => {
          const other = await admin.context.newPage()
          await other.goto(personUrl)
          await other.uncheck(`input[name=group][value="${groupId}"]`)
          await submit(other, "Save access of Lena Berg")
          expect(await other.textContent("[role=status]")).toBe("Saved Lena Berg.")
          await other.close()

          await page.uncheck("input[name=enabled]")
          expect(await submit(page, "Save access of Lena Berg")).toBe(412)
          expect(await page.textContent("h1")).toBe("The record changed")
          expect(await page.textContent("[role=alert]")).not.toBe("")
          expect(await mainText(page)).toContain("nothing was saved")
          // Reloading shows the other tab's change, and the person still enabled: nothing was overwritten.
          await page.click("text=Reload the form")
          expect(await page.textContent("h1")).toBe("Lena Berg")
          expect(await page.isChecked("input[name=enabled]")).toBe(true)
          expect(await mainText(page)).toContain("Member of no group.")
        })
        // The person is still enabled (their token works) and sees what the other tab's change left.
        expect(yield* toolNames).toEqual([])
        expect(browsers.problems).toEqual({ csp: [], dialogs: [], errors: [] })
      }),
    120_000
  )
})

describe("the console's form limits and OpenAPI imports", () => {
  it.scopedLive(
    "a definition up to 1 MiB fits however it is encoded; over 1 MiB, or a form over 4 MiB, is a 413 page naming the limit and the API; a URL import reaches the importer",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway(remoteConsole())
        const chromium = yield* Effect.acquireRelease(promise(launchChromium), (browser) =>
          promise(() => browser.close())
        )
        const browsers = watchedBrowsers(chromium)
        const { page } = yield* promise(browsers.open)
        const listUrl = `${gateway.adminUrl}/console/openapi-imports`
        yield* promise(() => consoleSignIn(page, gateway.adminUrl, "admin", ADMIN_PASSWORD, new Map()))
        /** Puts `definition` in the create form (as typed: the browser encodes it) and sends it. */
        const create = (definition: Record<string, unknown>) =>
          promise(async () => {
            await page.goto(listUrl)
            await page.evaluate((text) => {
              const scope = globalThis as unknown as { document: { querySelector: (s: string) => { value: string } } }
              scope.document.querySelector("#definition").value = text
            }, JSON.stringify(definition))
            return submit(page, "Create")
          })
        const document = (description: string) => ({
          openapi: "3.0.3",
          info: { title: "Pets", version: "1", description },
          paths: { "/pets": { get: { operationId: "listPets", responses: { "200": { description: "ok" } } } } }
        })
        const inline = (id: string, description: string) => ({
          id,
          server_url: "https://api.example.com",
          source: { document: document(description) }
        })

        // The form says what fits and where a larger document goes.
        yield* promise(() => page.goto(listUrl))
        const help = (yield* promise(() => page.textContent("#definition-help"))) ?? ""
        expect(help).toContain("At most 1 MiB")
        expect(help).toContain("source.url")
        expect(help).toContain("gateway admin openapi-imports create")

        // Just under 1 MiB of characters the browser sends as three bytes each (about 3 MiB of form): taken.
        // The create reloads the configuration from inside this console request; every request after it
        // (the redirect's GET, the posts below) must be read as itself, not as this one.
        expect(yield* create(inline("braces", "{".repeat(1000 * 1024)))).toBe(200)
        expect(yield* promise(() => page.textContent("h1"))).toBe("OpenAPI import braces")
        expect(yield* promise(() => page.textContent("#catalog"))).toContain("listPets")

        // Over 1 MiB of definition: 413, naming the console's limit, the URL and the API's 32 MiB.
        expect(yield* create(inline("large", "x".repeat(1100 * 1024)))).toBe(413)
        expect(yield* promise(() => page.textContent("h1"))).toBe("Too large")
        const large = (yield* promise(() => page.textContent("[role=alert]"))) ?? ""
        expect(large).toContain("definition: larger than 1 MiB, the most the console takes")
        expect(large).toContain("source.url")
        expect(large).toContain("POST /api/v1/openapi-imports, up to 32 MiB")

        // A form over 4 MiB is not read at all: 413, naming that limit.
        expect(yield* create(inline("huge", "x".repeat(4 * 1024 * 1024 + 1)))).toBe(413)
        expect(yield* promise(() => page.textContent("h1"))).toBe("Too large")
        const huge = (yield* promise(() => page.textContent("[role=alert]"))) ?? ""
        expect(huge).toContain("The form is larger than 4 MiB, the most the console reads. Nothing was saved.")
        expect(huge).toContain("source.url")

        // A URL import goes to the importer, which fetches https only: its own refusal, not a size.
        expect(
          yield* create({
            id: "remote",
            server_url: "https://api.example.com",
            source: { url: "http://127.0.0.1:9/x" }
          })
        ).toBe(400)
        expect(yield* promise(() => page.textContent("[role=alert]"))).toContain("https")

        // Nothing but the first import was created.
        yield* promise(() => page.goto(listUrl))
        expect(
          yield* promise(() => page.$$eval("#sources tbody th", (cells) => cells.map((cell) => cell.textContent)))
        ).toEqual(["braces"])
        // The overview is the new generation's: the import's create reloaded once.
        yield* promise(() => page.goto(`${gateway.adminUrl}/console`))
        expect(yield* promise(() => page.textContent("main"))).toContain("generation 2: ready")
        expect(browsers.problems).toEqual({ csp: [], dialogs: [], errors: [] })
      }),
    120_000
  )
})
