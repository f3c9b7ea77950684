import { formatPath, type PathSegment } from "./path.js"
import { problem } from "./problem.js"
import type { ConfigProblem } from "./service.js"

/**
 * `${NAME}` expansion of string values (docs/configuration.md, "Environment variables": other YAML
 * fields expand environment variables; everything under `auth.sso` is literal).
 *
 * - Only the braced form expands; a lone `$` is literal, and `$${` writes a literal `${`.
 * - A `${` without `}` or with a name outside `[A-Za-z_][A-Za-z0-9_]*` is a problem (no `${X:-default}`).
 * - An unset variable is a problem; a variable set to the empty string expands to "".
 * - One pass over the YAML text only: a value taken from the environment is never expanded again.
 * - Mapping keys are never expanded; expanded values are always strings.
 */

export type Env = Readonly<Record<string, string | undefined>>

export interface Expanded {
  readonly value: unknown
  readonly problems: ReadonlyArray<ConfigProblem>
  /** Text path → variable names used there, so messages can avoid echoing values from the environment. */
  readonly fromEnv: ReadonlyMap<string, ReadonlyArray<string>>
}

const variableName = /^[A-Za-z_][A-Za-z0-9_]*$/

export interface ExpandedString {
  readonly text: string
  readonly names: ReadonlyArray<string>
  readonly errors: ReadonlyArray<string>
}

export const expandString = (text: string, env: Env): ExpandedString => {
  let out = ""
  const names: Array<string> = []
  const errors: Array<string> = []
  let at = 0
  while (at < text.length) {
    const dollar = text.indexOf("$", at)
    if (dollar < 0) {
      out += text.slice(at)
      break
    }
    out += text.slice(at, dollar)
    if (text.startsWith("$${", dollar)) {
      out += "${"
      at = dollar + 3
    } else if (text.startsWith("${", dollar)) {
      const close = text.indexOf("}", dollar + 2)
      if (close < 0) {
        errors.push(`unclosed "\${" (write "$\${" for a literal "\${")`)
        break
      }
      const name = text.slice(dollar + 2, close)
      const value = env[name]
      if (!variableName.test(name)) errors.push(`invalid variable name ${JSON.stringify(name)} in "\${...}"`)
      else if (value === undefined) errors.push(`environment variable ${name} is not set`)
      else {
        out += value
        names.push(name)
      }
      at = close + 1
    } else {
      out += "$"
      at = dollar + 1
    }
  }
  return { text: out, names, errors }
}

const isLiteralSubtree = (path: ReadonlyArray<PathSegment>) => path[0] === "auth" && path[1] === "sso"

export const expandEnv = (value: unknown, env: Env): Expanded => {
  const problems: Array<ConfigProblem> = []
  const fromEnv = new Map<string, ReadonlyArray<string>>()
  const walk = (node: unknown, path: Array<PathSegment>): unknown => {
    if (isLiteralSubtree(path)) return node
    if (typeof node === "string") {
      const expanded = expandString(node, env)
      const where = formatPath(path)
      for (const error of expanded.errors) problems.push(problem(where, error))
      if (expanded.names.length > 0) fromEnv.set(where, expanded.names)
      return expanded.text
    }
    if (Array.isArray(node)) return node.map((item, index) => walk(item, [...path, index]))
    if (typeof node === "object" && node !== null) {
      // fromEntries defines own properties, so a YAML key named "__proto__" stays an ordinary (unknown) key.
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item, [...path, key])]))
    }
    return node
  }
  return { value: walk(value, []), problems, fromEnv }
}
