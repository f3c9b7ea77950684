/**
 * vitest `globalSetup`: the sign-in tests drive Debian's Chromium (test/support/browser.ts). Without it
 * the run stops before any test, saying how to get it, instead of failing deep inside a test with
 * "Failed to launch chromium".
 */
import { accessSync, constants } from "node:fs"
import { CHROMIUM_PATH } from "./browser.js"

const missingChromium = (path: string = CHROMIUM_PATH): string | undefined => {
  try {
    accessSync(path, constants.X_OK)
    return undefined
  } catch {
    return (
      `The tests need Chromium at ${path} for the browser sign-in pages, and it is not there. ` +
      "Install it with `apt-get install -y chromium` (Debian), or run `.ci/run`, which installs it before `npm test`."
    )
  }
}

export default function setup(): void {
  const problem = missingChromium()
  if (problem === undefined) return
  // Exits rather than throws: a thrown error comes after vitest's misleading "No test files found".
  process.stderr.write(`\n${problem}\n\n`)
  process.exit(1)
}
