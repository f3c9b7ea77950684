import { projectRoot } from "./build.js"
import { type Child, startProcess } from "./process.js"

const entry = new URL("./bare-proxy-main.ts", import.meta.url).pathname

/** Starts the bare pass-through proxy (bench/support/bare-proxy-main.ts) in front of `targetOrigin`. */
export const startBareProxy = async (port: number, targetOrigin: string): Promise<Child> => {
  const child = startProcess("bare proxy", process.execPath, ["--import", "tsx", entry], {
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
