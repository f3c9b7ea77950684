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
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
