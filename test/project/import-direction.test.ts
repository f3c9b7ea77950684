/**
 * Imports go one way (docs/code-layout.md, "Which way imports go"): the policy and write approvals
 * decide on types of their own (src/policy/tool.ts), so neither imports anything of /mcp — the catalog,
 * the calls, the edge, the upstream side — not even a type. Read from the sources themselves.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")

const sourcesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourcesUnder(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

/** Every module a source names: `import … from`, `export … from`, side-effect imports and `import()`. */
const specifiersOf = (text: string): Array<string> => {
  const found: Array<string> = []
  const patterns = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']/g]
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]!)
  return found
}

/** `file`'s imports that resolve into `forbidden` (a folder of the repository), as "file → module". */
const importsInto = (file: string, text: string, forbidden: string): Array<string> =>
  specifiersOf(text)
    .filter((specifier) => specifier.startsWith("."))
    .filter((specifier) => {
      const target = relative(join(root, forbidden), resolve(dirname(file), specifier))
      return !target.startsWith("..")
    })
    .map((specifier) => `${relative(root, file)} → ${specifier}`)

describe("which way imports go", () => {
  it("src/policy and src/approvals import nothing from src/mcp", () => {
    const offending = ["src/policy", "src/approvals"].flatMap((folder) =>
      sourcesUnder(join(root, folder)).flatMap((file) => importsInto(file, readFileSync(file, "utf8"), "src/mcp"))
    )
    expect(offending).toEqual([])
  })

  it("the check finds every form of import into src/mcp (so an empty list means none)", () => {
    const file = join(root, "src/policy/example.ts")
    const text = [
      'import type { ExposedTool } from "../mcp/catalog/index.js"',
      'export { ToolCalls } from "../mcp/calls/tool-calls.js"',
      'import "../mcp/echo.js"',
      'const later = await import("../mcp/edge/post.js")',
      'import { View } from "./view.js"',
      'import { Config } from "../config/service.js"'
    ].join("\n")
    expect(importsInto(file, text, "src/mcp")).toEqual([
      "src/policy/example.ts → ../mcp/catalog/index.js",
      "src/policy/example.ts → ../mcp/calls/tool-calls.js",
      "src/policy/example.ts → ../mcp/echo.js",
      "src/policy/example.ts → ../mcp/edge/post.js"
    ])
  })
})
