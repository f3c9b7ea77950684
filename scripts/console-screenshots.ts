/**
 * Screenshots of the console for docs/console.md: `npm run screenshots`. Starts an in-process gateway
 * in `admin.mode: remote` (the admin listener on loopback stands for the HTTPS proxy) with configuration
 * review on and demo data — two real MCP backends, people (one waiting for enrolment), a permission
 * group granting a tool, an approved backend and a pending change to it — signs in with Chromium as the
 * built-in administrator (password and TOTP) and writes the main pages, 1200×800 each, to
 * docs/console/<name>.png.
 */
import { mkdirSync } from "node:fs"
import { resolve } from "node:path"
import { Effect, Option, Schema } from "effect"
import { LocalAccountAdmin } from "../src/identity/local/account-admin.js"
import { Permissions } from "../src/policy/permissions.js"
import { PolicyWrites } from "../src/policy/writes.js"
import { ConfigChanges } from "../src/sources/changes.js"
import { sourceWrites } from "../src/sources/writes.js"
import { UserRepo } from "../src/store/users.js"
import { addLocalUser } from "../test/support/admin-api.js"
import { launchChromium } from "../test/support/browser.js"
import { consoleSignIn, remoteConsole } from "../test/support/console.js"
import { testActor } from "../test/support/grants.js"
import { ADMIN_PASSWORD, inGeneration, oauthGateway } from "../test/support/oauth-gateway.js"
import { backendServer } from "../test/support/tool-source-gateway.js"

const target = resolve(import.meta.dirname, "../docs/console")

const program = Effect.gen(function* () {
  mkdirSync(target, { recursive: true })
  const tickets = yield* backendServer("tickets")
  const wiki = yield* backendServer("wiki")
  const gateway = yield* oauthGateway(
    remoteConsole({
      patch: {
        backends: [
          { id: "tickets", url: tickets.url, allow_insecure_http: true, required: true, tool_rules: [{ tools: ["*"] }] }
        ],
        admin: { approvals: { policy_changes: { enabled: true } } }
      }
    })
  )
  const ana = yield* addLocalUser(gateway, "ana", "a demo password of ana's")
  yield* addLocalUser(gateway, "ben", "a demo password of ben's")
  const demo = yield* inGeneration(gateway)(
    Effect.gen(function* () {
      const writes = yield* PolicyWrites
      const admin = Option.getOrThrow(yield* (yield* UserRepo).findBuiltinAdmin)
      const actor = { userId: admin.id, kind: admin.kind }
      const group = yield* writes.createGroup(testActor, {
        name: "Ticket readers",
        enabled: true,
        permissions: Schema.decodeUnknownSync(Permissions)({
          roles: [],
          scopes: [],
          access: [{ endpoint_id: "tickets", tools: ["search"] }]
        }),
        sourceGroups: []
      })
      const person = Option.getOrThrow(yield* (yield* UserRepo).findById(ana))
      yield* writes.updateUser(testActor, ana, person.revision, { enabled: true, groups: [group] })
      yield* (yield* LocalAccountAdmin)
        .create(actor, { username: "carla", displayName: "Carla Diaz" })
        .pipe(Effect.orDie)
      // A backend proposed and approved by a security reviewer, then a change to it waiting for review.
      const backends = yield* sourceWrites("backend")
      const source = { userId: admin.id, requestId: "screenshots" }
      const definition = { id: "wiki", url: wiki.url, allow_insecure_http: true, tool_rules: [{ tools: ["*"] }] }
      const created = yield* backends.create(definition, source).pipe(Effect.orDie)
      if (!("approval_id" in created)) return yield* Effect.dieMessage("expected a proposal")
      const reviewer = { user_id: "reviewer", name: "Rita Reviewer" }
      yield* (yield* ConfigChanges).approve(created.approval_id, reviewer).pipe(Effect.orDie)
      const stored = yield* backends.read("wiki").pipe(Effect.orDie)
      const change = yield* backends
        .update(
          "wiki",
          Number(stored.revision),
          { ...definition, tool_rules: [{ tools: ["search"] }, { tools: ["echo"], write: true }] },
          source
        )
        .pipe(Effect.orDie)
      if (!("approval_id" in change)) return yield* Effect.dieMessage("expected a proposal")
      return { group, proposal: change.approval_id }
    })
  )
  const pages: ReadonlyArray<readonly [string, string]> = [
    ["overview", "/console"],
    ["people", "/console/identities"],
    ["person", `/console/identities/${ana}`],
    ["groups", "/console/groups"],
    ["group", `/console/groups/${demo.group}`],
    ["local-accounts", "/console/local-accounts"],
    ["backends", "/console/backends"],
    ["proposal", `/console/proposals/${demo.proposal}`],
    ["approvals", "/console/approvals"],
    ["audit", "/console/audit"]
  ]
  const written: Array<string> = []
  yield* Effect.acquireUseRelease(
    Effect.promise(launchChromium),
    (chromium) =>
      Effect.promise(async () => {
        const context = await chromium.newContext({ viewport: { width: 1200, height: 800 } })
        const page = await context.newPage()
        const shoot = async (name: string) => {
          const file = resolve(target, `${name}.png`)
          await page.screenshot({ path: file })
          written.push(file)
        }
        await page.goto(`${gateway.adminUrl}/console`)
        await shoot("sign-in")
        await consoleSignIn(page, gateway.adminUrl, "admin", ADMIN_PASSWORD, new Map())
        for (const [name, path] of pages) {
          const response = await page.goto(gateway.adminUrl + path)
          if (response?.status() !== 200) throw new Error(`${path} answered ${response?.status()}`)
          // The person's page: its effective access is what the picture is for.
          if (name === "person") await page.locator("#access-heading").scrollIntoViewIfNeeded()
          if (name === "proposal") await page.locator("#diff-heading").scrollIntoViewIfNeeded()
          await shoot(name)
        }
      }),
    (chromium) => Effect.promise(() => chromium.close())
  )
  for (const file of written) process.stdout.write(`wrote ${file}\n`)
})

await Effect.runPromise(Effect.scoped(program))
