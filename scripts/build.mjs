// Builds the `gateway` executable, dist/main.js, and the development start `npm start` runs,
// dist/demo.js (the demo notes backend and `gateway serve --dev` in one process, src/demo/start.ts): one
// ESM bundle whose two entry points share their chunks. `npm ci` runs it (package.json's `prepare`).
// Why a bundle and not tsc's file-per-module output: loading the thousands of small ES modules of
// Effect, the MCP SDKs and their dependencies took about 1.2 s of a 1.5 s start; one file starts in
// about 0.6 s (docs/decisions.md). Type checking stays with `npm run typecheck`.
//
//   node scripts/build.mjs              builds
//   node scripts/build.mjs --if-stale   builds only when dist/ is missing an entry point or is older
//                                       than a source (`npm start` runs this first: package.json's `prestart`)
import { chmodSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

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
  entryPoints: { main: "src/main.ts", demo: "src/demo/start.ts" },
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

/** The files a build reads from the repository; node_modules changes only through `npm ci`, which builds. */
const inputsOf = (root) => {
  const under = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? under(join(dir, entry.name)) : [join(dir, entry.name)]
    )
  return [
    ...under(join(root, "src")),
    ...["scripts/build.mjs", "package.json", "tsconfig.json"].map((f) => join(root, f))
  ]
}

/**
 * Why `root`'s dist/ must be built again, or undefined when it is up to date: an entry point is missing,
 * or a source was changed after the oldest of them was written (a `git pull`, an edit). Modification
 * times only, read in a few milliseconds: `npm start` asks this on every start.
 */
export const staleBecause = (root) => {
  const outputs = Object.keys(gatewayBuildOptions.entryPoints).map((name) => join(root, "dist", `${name}.js`))
  let built = Number.POSITIVE_INFINITY
  for (const output of outputs) {
    try {
      built = Math.min(built, statSync(output).mtimeMs)
    } catch {
      return `${relative(root, output)} is missing`
    }
  }
  for (const input of inputsOf(root)) {
    if (statSync(input).mtimeMs > built) return `${relative(root, input)} changed after the last build`
  }
  return undefined
}

/** Builds into `root`/dist. Written only once every check passed: a refused build leaves the previous dist/ as it was. */
export const buildInto = async (root) => {
  const { build } = await import("esbuild")
  // Files of earlier builds stay (a gateway running from dist/ may still load its chunks lazily).
  const { outputFiles } = await build({ ...gatewayBuildOptions, absWorkingDir: root, write: false })
  for (const file of outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true })
    // Executable when it starts with a shebang, as esbuild itself writes it.
    const executable = file.contents[0] === 0x23 && file.contents[1] === 0x21
    writeFileSync(file.path, file.contents, { mode: executable ? 0o755 : 0o644 })
    if (executable) chmodSync(file.path, 0o755)
  }
}

// `node scripts/build.mjs` (npm run build) builds; importing this file only reads the settings.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const root = fileURLToPath(new URL("..", import.meta.url))
  const args = process.argv.slice(2)
  if (args.some((arg) => arg !== "--if-stale")) {
    process.stderr.write("usage: node scripts/build.mjs [--if-stale]\n")
    process.exit(2)
  }
  if (args.includes("--if-stale")) {
    const why = staleBecause(root)
    if (why === undefined) process.exit(0)
    process.stderr.write(`Building dist/ (${why}) …\n`)
  }
  await buildInto(root)
}
