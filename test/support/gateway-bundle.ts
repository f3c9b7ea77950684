/**
 * vitest `globalSetup`: builds the `gateway` executable the tests spawn (test/support/gateway-process.ts)
 * once per run, with esbuild and the settings of `npm run build` (scripts/build.mjs). Spawned through tsx
 * instead, every process transpiled the whole TypeScript graph again: about 7 s before its first line on
 * a 2-core machine, against under 1 s for the bundle.
 *
 * Built fresh at the start of every run (and before every rerun in watch mode), into a directory of this
 * run's own that is removed at its end: a spawned process never runs code older than the sources, and two
 * runs at once never replace each other's files.
 */
import { readdirSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { type BuildOptions, build } from "esbuild"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** The directory holding this run's `main.js`, `demo.js` and `serve-for-tests.js`. */
    gatewayBundle: string
  }
}

const root = resolve(import.meta.dirname, "../..")
// Inside the project's node_modules: the bundle's external packages (better-sqlite3, ldapts) are
// looked up from the bundle's own directory upwards, as dist/main.js finds them.
const bundles = join(root, "node_modules/.cache/gateway-test-bundles")

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Bundles of earlier runs that were killed before their teardown. */
const removeAbandoned = () => {
  let names: Array<string> = []
  try {
    names = readdirSync(bundles)
  } catch {
    return
  }
  for (const name of names) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || !isRunning(pid)) rmSync(join(bundles, name), { recursive: true, force: true })
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  removeAbandoned()
  const outdir = join(bundles, String(process.pid))
  const { gatewayBuildOptions } = (await import(pathToFileURL(join(root, "scripts/build.mjs")).href)) as {
    gatewayBuildOptions: BuildOptions
  }
  const bundle = async () => {
    rmSync(outdir, { recursive: true, force: true })
    await build({
      ...gatewayBuildOptions,
      absWorkingDir: root,
      // The executable and `npm start`'s demo.js, as shipped, and the executable with the test-only
      // route (test/support/serve-for-tests.ts).
      entryPoints: {
        ...(gatewayBuildOptions.entryPoints as Record<string, string>),
        "serve-for-tests": "test/support/serve-for-tests.ts"
      },
      outdir,
      // Source maps would add seconds to the build, and reading them (--enable-source-maps) 0.4 s to
      // every start.
      sourcemap: false
    })
  }
  await bundle()
  project.provide("gatewayBundle", outdir)
  // Watch mode: a rerun follows a change in the sources.
  project.onTestsRerun(bundle)
  return () => rmSync(outdir, { recursive: true, force: true })
}
