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
