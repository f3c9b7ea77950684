/**
 * Screenshots of the console for docs/console.md: `npm run screenshots`. Starts an in-process gateway
 * in `admin.mode: remote` (the admin listener on loopback stands for the HTTPS proxy) with demo data —
 * two local accounts, a permission group, a backend that is down — signs in with Chromium as the
 * built-in administrator (password and TOTP), and writes the sign-in page, the overview and every GET
 * page of the sections registry without path parameters to docs/console/<name>.png.
 */
import { mkdirSync } from "node:fs"
import { resolve } from "node:path"
import { Effect } from "effect"
import { addLocalUser } from "../test/support/admin-api.js"
import { launchChromium } from "../test/support/browser.js"
import { consolePagePaths, consoleSignIn, remoteConsole } from "../test/support/console.js"
import { createGroup } from "../test/support/grants.js"
import { ADMIN_PASSWORD, inGateway, oauthGateway } from "../test/support/oauth-gateway.js"

const target = resolve(import.meta.dirname, "../docs/console")

/** `/console` is the overview; `/console/identities/groups` becomes `identities-groups`. */
const fileName = (path: string) =>
  path === "/console" ? "overview" : path.slice("/console/".length).replaceAll("/", "-")

const program = Effect.gen(function* () {
  mkdirSync(target, { recursive: true })
  const gateway = yield* oauthGateway(
    remoteConsole({
      patch: {
        backends: [{ id: "tickets", url: "http://127.0.0.1:9/mcp", allow_insecure_http: true, required: false }]
      }
    })
  )
  yield* addLocalUser(gateway, "ana", "a demo password of ana's")
  yield* addLocalUser(gateway, "ben", "a demo password of ben's")
  yield* inGateway(gateway)(createGroup([{ endpoint_id: "tickets", tools: ["*"] }]).pipe(Effect.orDie))
  const written: Array<string> = []
  yield* Effect.acquireUseRelease(
    Effect.promise(launchChromium),
    (chromium) =>
      Effect.promise(async () => {
        const context = await chromium.newContext({ viewport: { width: 1200, height: 760 } })
        const page = await context.newPage()
        const shoot = async (name: string) => {
          const file = resolve(target, `${name}.png`)
          await page.screenshot({ path: file, fullPage: true })
          written.push(file)
        }
        await page.goto(`${gateway.adminUrl}/console`)
        await shoot("sign-in")
        await consoleSignIn(page, gateway.adminUrl, "admin", ADMIN_PASSWORD, new Map())
        for (const path of consolePagePaths) {
          await page.goto(gateway.adminUrl + path)
          await shoot(fileName(path))
        }
      }),
    (chromium) => Effect.promise(() => chromium.close())
  )
  for (const file of written) process.stdout.write(`wrote ${file}\n`)
})

await Effect.runPromise(Effect.scoped(program))
