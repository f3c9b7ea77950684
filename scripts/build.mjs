// Builds the `gateway` executable: one ESM bundle, dist/main.js.
// Why a bundle and not tsc's file-per-module output: loading the thousands of small ES modules of
// Effect, the MCP SDKs and their dependencies took about 1.2 s of a 1.5 s start; one file starts in
// about 0.6 s (docs/decisions.md). Type checking stays with `npm run typecheck`.
import { readFileSync, realpathSync, rmSync } from "node:fs"
import { resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { build } from "esbuild"

/**
 * Fails the build when an emitted file holds a character above U+00FF. V8 keeps each module's source
 * text in memory for as long as the process runs, one byte per character when every character fits in
 * Latin-1 and two bytes otherwise: a single curly quote in a template literal doubled the 1.2 MB
 * main.js (docs/decisions.md, "The bundle's size in memory"). Write such a character as an escape or
 * an HTML entity instead.
 */
const latin1Only = {
  name: "latin1-only",
  setup(build) {
    build.onEnd((result) => {
      const errors = []
      const root = build.initialOptions.absWorkingDir ?? process.cwd()
      for (const file of Object.keys(result.metafile?.outputs ?? {})) {
        if (!file.endsWith(".js")) continue
        const text = readFileSync(resolve(root, file), "utf8")
        const at = text.search(/[\u{100}-\u{10ffff}]/u)
        if (at < 0) continue
        const line = text.slice(0, at).split("\n").length
        const context = text.slice(Math.max(0, at - 40), at + 10).replace(/\s+/g, " ")
        errors.push({
          text: `${file}:${line} holds U+${text.codePointAt(at).toString(16).toUpperCase().padStart(4, "0")} ("${context}"): outside Latin-1, the whole file would be kept as two bytes per character; write it as an escape or entity`
        })
      }
      return { errors }
    })
  }
}

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
  // Whitespace and comments out, names kept: the source text is held in memory as long as the process
  // runs (idle RSS), while function names stay readable in stack traces (docs/decisions.md, "The
  // bundle's size in memory"). Licence comments go to a file beside each output.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "linked",
  metafile: true,
  plugins: [latin1Only],
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
  const root = fileURLToPath(new URL("..", import.meta.url))
  // A clean directory: chunk names carry content hashes, so older builds' chunks would pile up.
  rmSync(resolve(root, "dist"), { recursive: true, force: true })
  await build({ ...gatewayBuildOptions, absWorkingDir: root })
}
