import { type Document, isAlias, isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from "yaml"
import type { PathSegment } from "./path.js"
import { problem } from "./problem.js"
import type { ConfigProblem } from "./service.js"

/**
 * Parsing YAML text into plain data while keeping a way back from a path to its line.
 * The 1 MiB file cap bounds everything below; the alias cap stops "billion laughs" documents, whose
 * expansion would otherwise be exponential in the file size.
 */

export const MAX_ALIAS_COUNT = 100

export interface YamlSource {
  readonly value: unknown
  readonly lineOf: (path: ReadonlyArray<PathSegment>) => number | undefined
}

export type ParsedYaml =
  | { readonly _tag: "Parsed"; readonly source: YamlSource }
  | {
      readonly _tag: "Rejected"
      readonly problems: ReadonlyArray<ConfigProblem>
    }

const rejected = (problems: ReadonlyArray<ConfigProblem>): ParsedYaml => ({ _tag: "Rejected", problems })

/** The yaml package points at a duplicate key's first character only; read the key up to its colon. */
const keyAt = (text: string, offset: number): string => {
  const key = /^("(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*'|[^:#,{}\n]*?)\s*:/.exec(text.slice(offset, offset + 256))?.[1]
  return key === undefined || key === ""
    ? ""
    : ` ${key.startsWith('"') || key.startsWith("'") ? key : JSON.stringify(key)}`
}

export const parseYaml = (text: string): ParsedYaml => {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, strict: true })
  const lineAt = (offset: number) => lineCounter.linePos(offset).line
  const syntax = [...doc.errors, ...doc.warnings].map(
    (error): ConfigProblem => ({
      path: "",
      line: lineAt(error.pos[0]),
      message:
        error.code === "DUPLICATE_KEY"
          ? `duplicate key${keyAt(text, error.pos[0])} (keys must be unique)`
          : `YAML: ${error.message}`
    })
  )
  if (syntax.length > 0) return rejected(syntax)
  if (doc.contents === null) return rejected([problem("", "the configuration file is empty")])
  let value: unknown
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })
  } catch (error) {
    // The yaml package signals alias bombs (and aliases to undefined anchors) with a ReferenceError.
    if (!(error instanceof ReferenceError)) throw error
    return rejected([problem("", `YAML aliases expand too much (limit ${MAX_ALIAS_COUNT}): ${error.message}`)])
  }
  return { _tag: "Parsed", source: { value, lineOf: (path) => lineOfPath(doc, lineAt, path) } }
}

const nodeLine = (node: unknown, lineAt: (offset: number) => number) =>
  isNode(node) && node.range ? lineAt(node.range[0]) : undefined

const keyText = (key: unknown) => (isScalar(key) ? String(key.value) : String(key))

/** The line of the deepest node on `path` that exists: the key's line for a mapping entry. */
const lineOfPath = (
  doc: Document,
  lineAt: (offset: number) => number,
  path: ReadonlyArray<PathSegment>
): number | undefined => {
  let node: unknown = doc.contents
  let line = nodeLine(doc.contents, lineAt)
  for (const segment of path) {
    while (isAlias(node)) node = node.resolve(doc)
    if (isMap(node)) {
      const pair = node.items.find((item) => keyText(item.key) === String(segment))
      if (pair === undefined) return line
      line = nodeLine(pair.key, lineAt) ?? line
      node = pair.value
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment]
      if (item === undefined) return line
      line = nodeLine(item, lineAt) ?? line
      node = item
    } else {
      return line
    }
  }
  return line
}
