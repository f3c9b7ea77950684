/**
 * The docs check: README.md and every docs/**\/*.md point only at what exists — every relative link at
 * a file or folder of the repository (and a `#anchor` at a heading of the Markdown file it names), and
 * every command shown in code (`gateway <subcommand>`, `src/main.ts <subcommand>`, `dist/main.js
 * <subcommand>`, `npm run <script>`) at a subcommand of the CLI (src/cli/run.ts) or a script of
 * package.json. And a command shown for a checkout runs the build `npm ci` makes (`node dist/main.js
 * <subcommand>`, an npm script), never the sources through tsx (about 10 s a command) nor `npx gateway`
 * (README, "Running it for real").
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { Command } from "@effect/cli"
import { HashMap } from "effect"
import { describe, expect, it } from "vitest"
import { rootCommand } from "../../src/cli/run.js"
import { headingAnchors, linkTargets, type Markdown, parseMarkdown } from "../support/markdown.js"

const root = resolve(import.meta.dirname, "../..")

const markdownUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return markdownUnder(path)
    return entry.name.endsWith(".md") ? [path] : []
  })

const documents = [join(root, "README.md"), ...markdownUnder(join(root, "docs"))]
const parsed = new Map<string, Markdown>()
const markdownOf = (path: string): Markdown => {
  let markdown = parsed.get(path)
  if (markdown === undefined) {
    markdown = parseMarkdown(readFileSync(path, "utf8"))
    parsed.set(path, markdown)
  }
  return markdown
}

const subcommands = new Set(HashMap.keys(Command.getSubcommands(rootCommand())))
const scripts = new Set(Object.keys(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts))

/** Problems with one link target of `file`, or none. */
const checkLink = (file: string, target: string): string | undefined => {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined
  const [pathPart = "", anchor] = target.split("#", 2)
  const path = pathPart === "" ? file : resolve(dirname(file), decodeURIComponent(pathPart))
  if (!path.startsWith(root)) return `${target}: outside the repository`
  if (!existsSync(path)) return `${target}: no such file`
  if (anchor === undefined || anchor === "") return undefined
  if (statSync(path).isDirectory() || !path.endsWith(".md")) return undefined
  return headingAnchors(markdownOf(path)).has(decodeURIComponent(anchor).toLowerCase())
    ? undefined
    : `${target}: no heading with the anchor #${anchor} in ${relative(root, path)}`
}

// The executable's name, or the source and bundle entry points run in its place, then a word; not
// "the gateway …" or "your gateway …" in a message shown as code, nor a quoted log message.
const cliCommand =
  /(?<![\w"-])(?<!\b(?:[Tt]he|[Aa]n?|[Yy]our|[Oo]ur|[Tt]his|[Tt]hat|[Ee]ach|[Ee]very|[Ii]ts|[Tt]heir)[ \t]+)(?:gateway|src\/main\.ts|dist\/main\.js)[ \t]+([a-z][a-z0-9-]*)(?![\w.:/-])/g
const npmRun = /\bnpm run(?:[ \t]+-s)?[ \t]+([\w:-]+)/g

/** Code that reads like a command but is none: constants the docs quote (a sealed value's header, a log message). */
const notCommands = new Set(["gateway sealed secrets v1", "gateway serving"])

// The CLI run from its sources through tsx, and the executable's name through npx.
const slowCommand = /\btsx[ \t]+src\/main\.ts\b|\bnpx[ \t]+gateway[ \t]+(?=[a-z-])/g

const checkCode = (code: string): Array<string> => [
  ...[...code.matchAll(slowCommand)].map(
    (match) => `${match[0].trim()}: show \`node dist/main.js <subcommand>\` (the build npm ci makes) instead`
  ),
  ...[...(notCommands.has(code) ? [] : code.matchAll(cliCommand))]
    .filter((match) => !subcommands.has(match[1]!))
    .map((match) => `${match[0].trim()}: "${match[1]}" is not a subcommand of gateway`),
  ...[...code.matchAll(npmRun)]
    .filter((match) => !scripts.has(match[1]!))
    .map((match) => `${match[0].trim()}: no script "${match[1]}" in package.json`)
]

describe("the docs check (README.md, docs/)", () => {
  it("finds the CLI's subcommands and the documents it checks", () => {
    expect([...subcommands]).toEqual(expect.arrayContaining(["serve", "validate", "init-admin", "admin-login"]))
    expect(documents.map((path) => relative(root, path))).toEqual(
      expect.arrayContaining(["README.md", "docs/mcp.md", "docs/operations.md"])
    )
  })

  it.each(documents.map((path) => [relative(root, path), path]))(
    "%s: every relative link reaches a file (and heading) of the repository",
    (_name, path) => {
      const problems = linkTargets(markdownOf(path)).flatMap((target) => checkLink(path, target) ?? [])
      expect(problems).toEqual([])
    }
  )

  it("refuses a command that runs the CLI through tsx or npx", () => {
    expect(checkCode("npx tsx src/main.ts init-admin --config config/gateway.yaml")).toEqual([
      "tsx src/main.ts: show `node dist/main.js <subcommand>` (the build npm ci makes) instead"
    ])
    expect(checkCode("npx gateway connect http://127.0.0.1:8080/mcp")).toHaveLength(1)
    expect(checkCode("node dist/main.js init-admin --config config/gateway.yaml")).toEqual([])
  })

  it.each(documents.map((path) => [relative(root, path), path]))(
    "%s: every gateway subcommand and npm script shown exists, run from the build",
    (_name, path) => {
      expect(markdownOf(path).code.flatMap(checkCode)).toEqual([])
    }
  )
})
