/**
 * Accessibility of every console page (docs/console.md, "Accessibility"): a signed-in administrator
 * opens the overview and every GET page of the sections registry without path parameters, and axe-core
 * finds no serious or critical violation on any of them, in Chromium, under the pages' own CSP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { seriousViolations } from "../support/axe.js"
import { launchChromium, watchedBrowsers } from "../support/browser.js"
import { consolePagePaths, consoleSignIn, remoteConsole } from "../support/console.js"
import { ADMIN_PASSWORD, oauthGateway } from "../support/oauth-gateway.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

describe("the console's pages are accessible", () => {
  it.scopedLive("axe-core: no serious or critical violation on any page without path parameters", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway(remoteConsole())
      const chromium = yield* Effect.acquireRelease(promise(launchChromium), (browser) =>
        promise(() => browser.close())
      )
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
})
