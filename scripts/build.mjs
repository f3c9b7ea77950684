// Builds the `gateway` executable: one ESM bundle, dist/main.js.
// Why a bundle and not tsc's file-per-module output: loading the thousands of small ES modules of
// Effect, the MCP SDKs and their dependencies took about 1.2 s of a 1.5 s start; one file starts in
// about 0.6 s (docs/decisions.md). Type checking stays with `npm run typecheck`.
import { chmodSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { dirname, relative, resolve } from "node:path"
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
      const root = build.initialOptions.absWorkingDir ?? process.cwd()
      // Written by esbuild (the tests' bundle), or still in memory (`npm run build`, below).
      const files =
        result.outputFiles?.map((file) => ({ path: file.path, text: () => file.text })) ??
        Object.keys(result.metafile?.outputs ?? {}).map((path) => ({
          path,
          text: () => readFileSync(resolve(root, path), "utf8")
        }))
      const errors = []
      for (const file of files) {
        if (!file.path.endsWith(".js")) continue
        const text = file.text()
        const at = text.search(/[\u{100}-\u{10ffff}]/u)
        if (at < 0) continue
        const line = text.slice(0, at).split("\n").length
        const context = text.slice(Math.max(0, at - 40), at + 10).replace(/\s+/g, " ")
        const code = text.codePointAt(at).toString(16).toUpperCase().padStart(4, "0")
        errors.push({
          text: `${relative(root, resolve(root, file.path))}:${line} holds U+${code} ("${context}"): outside Latin-1, the whole file would be kept as two bytes per character; write it as an escape or entity`
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
  // Written only once every check passed: a refused build leaves the previous dist/ as it was. Files of
  // earlier builds stay (a gateway running from dist/ may still load its chunks lazily).
  const { outputFiles } = await build({ ...gatewayBuildOptions, absWorkingDir: root, write: false })
  for (const file of outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true })
    // Executable when it starts with a shebang, as esbuild itself writes it.
    const executable = file.contents[0] === 0x23 && file.contents[1] === 0x21
    writeFileSync(file.path, file.contents, { mode: executable ? 0o755 : 0o644 })
    if (executable) chmodSync(file.path, 0o755)
  }
}
