/**
 * The test files a worker runs share one module cache (vitest.config.ts, `isolate: false`), so they share
 * @effect/vitest's `it`. Its `layer()` (also reached as `it.layer`) assigns `effect` and `scoped` onto
 * that shared object, and every later file's `it.effect` would run on the layer's runtime and TestClock.
 * biome.json refuses importing `layer`; this refuses the `it.layer` spelling. Read from the sources.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")

const sourcesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourcesUnder(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

describe("the shared test API", () => {
  it("no test calls it.layer", () => {
    const offending = sourcesUnder(join(root, "test"))
      .filter((file) => /\bit\s*\.\s*layer\s*\(/.test(readFileSync(file, "utf8")))
      .map((file) => relative(root, file))
    expect(offending).toEqual([])
  })
})
