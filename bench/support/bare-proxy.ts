import { projectRoot } from "./build.js"
import { type Child, startProcess } from "./process.js"

const entries = {
  bare: new URL("./bare-proxy-main.ts", import.meta.url).pathname,
  parsing: new URL("./parsing-proxy-main.ts", import.meta.url).pathname
}

/**
 * Starts a floor proxy in front of `targetOrigin`: the bare pass-through one (bench/support/bare-proxy-main.ts),
 * or the one that parses what it forwards (`parsing`, bench/support/parsing-proxy-main.ts).
 */
export const startBareProxy = async (
  port: number,
  targetOrigin: string,
  kind: keyof typeof entries = "bare"
): Promise<Child> => {
  const child = startProcess(`${kind} proxy`, process.execPath, ["--import", "tsx", entries[kind]], {
    cwd: projectRoot,
    env: { PATH: process.env["PATH"] ?? "", BARE_PROXY_PORT: String(port), BARE_PROXY_TARGET: targetOrigin }
  })
  await child
    .waitForLine((line) => line === "listening", 20_000)
    .catch(async (error: unknown) => {
      await child.stop()
      throw error
    })
  return child
}
