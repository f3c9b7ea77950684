import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Checks for Chromium before any test runs (the browser tests need it; docs in the file).
    // Then installs the conformance suite's own tools when missing (tools/conformance; docs in the file).
    // Then builds the `gateway` executable the process tests spawn, from the current sources (docs in the file).
    globalSetup: [
      "test/support/chromium-check.ts",
      "test/support/conformance-tools.ts",
      "test/support/gateway-bundle.ts"
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One module cache per worker, shared by the files it runs (not a fresh one per file): importing
    // the Effect stack again for each of ~180 files cost 163 s of collect time (2 cores, quiet), now
    // 13 s; the whole run went from 363 s to 275 s (docs/decisions.md).
    // What one file leaves in a module or on the process therefore meets the files after it, so tests
    // restore what they change (process.env, fake timers, console spies) and put nothing shared in a
    // module that a later file could find changed. Known case: @effect/vitest's `layer()` rebinds the
    // shared `it.effect`/`it.scoped` to its own runtime (TestClock included) for every later file in
    // the worker; biome.json refuses importing it in test/, test/project/shared-test-api.test.ts its
    // `it.layer` spelling. No file needs a fresh module cache today; one that did would go in a second
    // project with `isolate: true`, its reason stated here.
    isolate: false,
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
