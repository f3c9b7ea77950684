import { type Browser, chromium } from "playwright-core"
// Debian's Chromium (`apt-get install -y chromium`; `.ci/run` installs it), where `npm test` looks first.
import { CHROMIUM_PATH } from "../../scripts/test-prerequisites.mjs"

export { CHROMIUM_PATH }

const flags = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic"
]

/** A headless Chromium driven by playwright-core; close it when done. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: flags })

/** What pages reported that they should not have: CSP violations, dialogs, script errors. */
export interface PageProblems {
  readonly csp: Array<string>
  readonly dialogs: Array<string>
  readonly errors: Array<string>
}

/**
 * Fresh browsers (each its own cookies) with one page, every one watched for CSP violations, dialogs
 * and script errors, which collect in `problems` for the test to assert empty.
 */
export const watchedBrowsers = (chromium: Browser) => {
  const problems: PageProblems = { csp: [], dialogs: [], errors: [] }
  const open = async () => {
    const context = await chromium.newContext()
    const page = await context.newPage()
    page.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) problems.csp.push(message.text())
    })
    page.on("dialog", (dialog) => {
      problems.dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    page.on("pageerror", (error) => problems.errors.push(error.message))
    return { context, page }
  }
  return { problems, open }
}
