import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { projectRoot } from "./build.js"
import { type Child, startProcess } from "./process.js"

const entry = new URL("./static-pages-main.ts", import.meta.url).pathname

/** Starts the static floor server (bench/support/static-pages-main.ts) serving `pages` (cursor → body). */
export const startStaticPages = async (
  port: number,
  pages: ReadonlyMap<string, string>
): Promise<{ readonly child: Child; readonly port: number; stop(): Promise<void> }> => {
  const dir = mkdtempSync(join(tmpdir(), "static-pages-"))
  const file = join(dir, "pages.json")
  writeFileSync(file, JSON.stringify(Object.fromEntries(pages)))
  const child = startProcess("static pages", process.execPath, ["--import", "tsx", entry], {
    cwd: projectRoot,
    env: { PATH: process.env["PATH"] ?? "", STATIC_PAGES_PORT: String(port), STATIC_PAGES_FILE: file }
  })
  const stop = async () => {
    await child.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  await child
    .waitForLine((line) => line === "listening", 20_000)
    .catch(async (error: unknown) => {
      await stop()
      throw error
    })
  return { child, port, stop }
}
