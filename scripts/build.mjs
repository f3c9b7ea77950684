// Builds the `gateway` executable: one ESM bundle, dist/main.js.
// Why a bundle and not tsc's file-per-module output: loading the thousands of small ES modules of
// Effect, the MCP SDKs and their dependencies took about 1.2 s of a 1.5 s start; one file starts in
// about 0.6 s (docs/decisions.md). Type checking stays with `npm run typecheck`.
import { realpathSync } from "node:fs"
import { pathToFileURL } from "node:url"
import { build } from "esbuild"

/**
 * The bundle's settings, shared with the tests' own build of the same executable
 * (test/support/gateway-bundle.ts), so the processes the tests spawn are built like the one shipped.
 */
export const gatewayBuildOptions = {
  entryPoints: ["src/main.ts"],
  outdir: "dist",
  // Code split at dynamic imports: a SQLite deployment never loads the PostgreSQL driver.
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20.18",
  sourcemap: "linked",
  // Native addons and optional native bindings load from node_modules at run time.
  // ldapts is loaded at its first use (src/identity/ldap/ldapts.ts), from node_modules.
  external: ["better-sqlite3", "pg-native", "ldapts"],
  // Some bundled dependencies are CommonJS and call require().
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);"
  },
  logLevel: "warning"
}

// `node scripts/build.mjs` (npm run build) builds; importing this file only reads the settings.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  await build(gatewayBuildOptions)
}
