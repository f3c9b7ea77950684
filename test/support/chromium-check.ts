/**
 * vitest `globalSetup`: the sign-in tests drive Debian's Chromium (test/support/browser.ts). Without it
 * the run stops before any test, saying how to get it, instead of failing deep inside a test with
 * "Failed to launch chromium". `npm test` asks the same before its type check
 * (scripts/test-prerequisites.mjs, which holds the check); this covers `npx vitest` on its own.
 */
import { missingChromium } from "../../scripts/test-prerequisites.mjs"

export default function setup(): void {
  const problem = missingChromium()
  if (problem === undefined) return
  // Exits rather than throws: a thrown error comes after vitest's misleading "No test files found".
  process.stderr.write(`\n${problem}\n\n`)
  process.exit(1)
}
