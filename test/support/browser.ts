import { createServer } from "node:http"
import { Effect } from "effect"
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
 * How long one browser step (a navigation, a click, a wait) may take: well under a test's timeout, so a
 * step that hangs fails naming itself ("page.waitForURL: Timeout 20000ms exceeded") instead of the
 * test timing out without saying where.
 */
export const STEP_TIMEOUT_MS = 20_000

/**
 * Fresh browsers (each its own cookies) with one page, every one watched for CSP violations, dialogs
 * and script errors, which collect in `problems` for the test to assert empty.
 */
export const watchedBrowsers = (chromium: Browser) => {
  const problems: PageProblems = { csp: [], dialogs: [], errors: [] }
  const open = async () => {
    const context = await chromium.newContext()
    context.setDefaultTimeout(STEP_TIMEOUT_MS)
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

/**
 * A client's loopback redirect target for browser sign-ins: records each callback URL and answers a
 * small page; closed with the calling scope.
 */
export const callbackServer = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ port: number; received: Array<URL>; close: () => void }>((done) => {
        const received: Array<URL> = []
        const server = createServer((request, response) => {
          received.push(new URL(request.url ?? "/", "http://127.0.0.1"))
          response.writeHead(200, { "content-type": "text/html" }).end("<title>signed in</title><p>done</p>")
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          const port = typeof address === "object" && address !== null ? address.port : 0
          done({ port, received, close: () => server.close() })
        })
      })
  ),
  (server) => Effect.sync(server.close)
)
