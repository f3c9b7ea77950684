import { SchemaAST as AST, Option, type ParseResult } from "effect"
import { formatPath } from "./path.js"
import { problem } from "./problem.js"
import type { ConfigProblem } from "./service.js"

/**
 * Turns a schema ParseIssue tree into one readable problem per offending YAML node. Effect's own
 * formatters print every union member (including the `undefined` that optional fields add) and dump
 * whole objects; configuration users need "unknown key", "expected X, got Y" and the path.
 */

type Path = ReadonlyArray<PropertyKey>
type FromEnv = ReadonlyMap<string, ReadonlyArray<string>>

const toArray = <A>(value: A | ReadonlyArray<A>): ReadonlyArray<A> =>
  Array.isArray(value) ? (value as ReadonlyArray<A>) : [value as A]

const knownIdentifiers: Record<string, string> = {
  Duration: "a duration such as 500ms, 30s, 5m or 24h",
  URL: "an absolute URL"
}

const orList = (items: ReadonlyArray<string>) =>
  items.length <= 2 ? items.join(" or ") : `one of ${items.slice(0, -1).join(", ")} or ${items.at(-1)}`

export const describeExpected = (ast: AST.AST): string => {
  const known = Option.getOrUndefined(AST.getIdentifierAnnotation(ast))
  if (known !== undefined && knownIdentifiers[known] !== undefined) return knownIdentifiers[known]
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "Literal":
      return JSON.stringify(ast.literal)
    case "TypeLiteral":
      return "a mapping"
    case "TupleType":
      return "a list"
    case "Refinement":
    case "Transformation":
      return describeExpected(ast.from)
    case "Union": {
      const members = ast.types.filter((member) => member._tag !== "UndefinedKeyword").map(describeExpected)
      return orList([...new Set(members)])
    }
    default:
      return "a valid value"
  }
}

const maxEcho = 60

export const describeActual = (actual: unknown): string => {
  if (typeof actual === "string") {
    const shown = actual.length > maxEcho ? `${actual.slice(0, maxEcho)}…` : actual
    return JSON.stringify(shown)
  }
  if (Array.isArray(actual)) return actual.length === 0 ? "an empty list" : "a list"
  if (actual === null) return "null"
  if (actual === undefined) return "nothing"
  if (typeof actual === "object") return "a mapping"
  return String(actual)
}

const annotatedMessage = (ast: AST.AST, issue: ParseResult.ParseIssue): string | undefined => {
  const annotation = Option.getOrUndefined(AST.getMessageAnnotation(ast))
  const message = annotation?.(issue)
  if (typeof message === "string") return message
  if (typeof message === "object" && "override" in message && typeof message.message === "string") {
    return message.message
  }
  return undefined
}

export const issueProblems = (root: ParseResult.ParseIssue, fromEnv: FromEnv): ReadonlyArray<ConfigProblem> => {
  // Values that came from the environment may be secrets: name the variables instead of echoing them.
  const got = (path: Path, actual: unknown) => {
    const names = fromEnv.get(formatPath(path))
    return names === undefined
      ? `got ${describeActual(actual)}`
      : `got the value built from ${names.map((name) => `\${${name}}`).join(", ")}`
  }
  const at = (path: Path, message: string): ReadonlyArray<ConfigProblem> => [problem(formatPath(path), message)]

  const union = (issue: ParseResult.Composite, path: Path): ReadonlyArray<ConfigProblem> => {
    const flatten = (member: ParseResult.ParseIssue): ReadonlyArray<ParseResult.ParseIssue> =>
      member._tag === "Composite" && AST.isUnion(member.ast) ? toArray(member.issues).flatMap(flatten) : [member]
    // Optional fields are unions with `undefined`: that alternative never explains a present value.
    const members = flatten(issue).filter((member) => !(member._tag === "Type" && AST.isUndefinedKeyword(member.ast)))
    const [only] = members
    return members.length === 1 && only !== undefined
      ? walk(only, path)
      : at(path, `expected ${describeExpected(issue.ast)}, ${got(path, issue.actual)}`)
  }

  const walk = (issue: ParseResult.ParseIssue, path: Path): ReadonlyArray<ConfigProblem> => {
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...toArray(issue.path)])
      case "Composite":
        return AST.isUnion(issue.ast) ? union(issue, path) : toArray(issue.issues).flatMap((inner) => walk(inner, path))
      case "Transformation": {
        // A number where a duration goes should say "duration", not the "string" it is parsed from.
        const named = knownIdentifiers[Option.getOrElse(AST.getIdentifierAnnotation(issue.ast), () => "")]
        return named !== undefined && issue.kind === "Encoded" && issue.issue._tag === "Type"
          ? at(path, `expected ${named}, ${got(path, issue.actual)}`)
          : walk(issue.issue, path)
      }
      case "Refinement": {
        if (issue.kind === "From") return walk(issue.issue, path)
        const custom =
          (issue.issue._tag === "Type" ? issue.issue.message : undefined) ?? annotatedMessage(issue.ast, issue)
        const description = Option.getOrElse(AST.getDescriptionAnnotation(issue.ast), () => "a valid value")
        return at(path, `${custom ?? `expected ${description}`}, ${got(path, issue.actual)}`)
      }
      case "Type":
        return at(path, `${issue.message ?? `expected ${describeExpected(issue.ast)}`}, ${got(path, issue.actual)}`)
      case "Missing":
        return at(path, `missing required key ${JSON.stringify(String(path.at(-1)))}`)
      case "Unexpected": {
        const key = path.at(-1)
        return at(path, typeof key === "number" ? "unexpected item" : `unknown key ${JSON.stringify(String(key))}`)
      }
      case "Forbidden":
        return at(path, "cannot be checked while loading")
    }
  }

  return walk(root, [])
}
