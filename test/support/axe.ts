import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import type { AxeResults } from "axe-core"
import type { Page } from "playwright-core"

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/** One accessibility rule a page breaks, and where. */
export interface AxeFinding {
  readonly rule: string
  readonly impact: string
  readonly help: string
  readonly targets: ReadonlyArray<string>
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules and best practices) on the page as it is now and returns the
 * serious and critical violations. The script is evaluated through the DevTools protocol, which the
 * page's CSP does not govern: the page itself still runs no script.
 */
export const seriousViolations = async (page: Page): Promise<ReadonlyArray<AxeFinding>> => {
  await page.evaluate(axeSource)
  const results = await page.evaluate(() => {
    const scope = globalThis as unknown as {
      axe: { run: (context: unknown, options: unknown) => Promise<AxeResults> }
      document: unknown
    }
    return scope.axe.run(scope.document, { resultTypes: ["violations"] })
  })
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => ({
      rule: violation.id,
      impact: violation.impact ?? "",
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.join(" "))
    }))
}
