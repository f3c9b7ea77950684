/**
 * The URL templates of HTTP tools (docs/tool-sources.md, "HTTP tools"): a small RFC 6570 subset the
 * gateway expands itself, because every encoding decision here decides whether an agent's argument can
 * move a request to another host or another path. Supported: `{var}` (simple), `{/var}` (one path
 * segment per variable), `{?a,b}` and `{&a}` (query parameters; `*` explodes a list). Refused when the
 * tool is saved: `{+var}` and `{#var}` (reserved expansion passes `/`, `?`, `#` through), `{.var}`,
 * `{;var}`, prefix modifiers (`:n`), any expression before the path, fragments and user info.
 *
 * Every value is percent-encoded as UTF-8 except the RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`),
 * so `/`, `?`, `#`, `@`, `%`, `&`, `=`, CR, LF and every non-ASCII character reach the service encoded.
 * After expansion the URL is parsed again and must have the template's origin, exactly the path the
 * expansion built (no normalisation), the segment count the template fixes and no `.`/`..` segment.
 */

export type Operator = "" | "/" | "?" | "&"

export interface Variable {
  /** As written in the template (query expressions name parameters with it). */
  readonly raw: string
  /** The top-level argument it takes its value from (the name, percent-decoded). */
  readonly argument: string
  readonly explode: boolean
}

export type Part =
  | { readonly kind: "literal"; readonly text: string; readonly inQuery: boolean }
  | {
      readonly kind: "expression"
      readonly operator: Operator
      readonly variables: ReadonlyArray<Variable>
      readonly inQuery: boolean
    }

export interface UrlTemplate {
  /** The literal scheme, host and port (`URL.origin`). */
  readonly origin: string
  readonly scheme: "https" | "http"
  /** What follows the origin: the path and query, literals and expressions. */
  readonly parts: ReadonlyArray<Part>
}

export type Parsed =
  | { readonly ok: true; readonly template: UrlTemplate }
  | { readonly ok: false; readonly message: string }

/** Longest URL a call may produce: most servers refuse request lines past 8 KiB. */
export const maxUrlLength = 8192

const literalCharacter = /^(?:[A-Za-z0-9\-._~:/?@!$&()*+,;=]|%[0-9A-Fa-f]{2})*$/
const varName = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*$/
const originPattern = /^(https?):\/\/([^/?#{}]*)(\/[^{}]*)?$/i

const refusedOperators: Readonly<Record<string, string>> = {
  "+": "reserved expansion ({+…}) passes '/', '?' and '#' through and could change the URL's shape",
  "#": "fragment expansion ({#…}) passes reserved characters through and is not sent to the service",
  ".": "label expansion ({.…}) is not supported",
  ";": "path-style parameters ({;…}) are not supported",
  "=": "the operator '=' is reserved by RFC 6570",
  ",": "the operator ',' is reserved by RFC 6570",
  "!": "the operator '!' is reserved by RFC 6570",
  "@": "the operator '@' is reserved by RFC 6570",
  "|": "the operator '|' is reserved by RFC 6570"
}

const fail = (message: string): Parsed => ({ ok: false, message })

const parseExpression = (body: string, inQuery: boolean): Part | string => {
  if (body === "") return "an empty expression {}"
  const first = body[0]!
  if (refusedOperators[first] !== undefined) return refusedOperators[first]!
  const operator: Operator = first === "/" || first === "?" || first === "&" ? first : ""
  const list = operator === "" ? body : body.slice(1)
  const variables: Array<Variable> = []
  for (const spec of list.split(",")) {
    const explode = spec.endsWith("*")
    const raw = explode ? spec.slice(0, -1) : spec
    if (raw.includes(":")) return `prefix modifiers (${spec}) are not supported`
    if (!varName.test(raw)) return `'${spec}' is not a variable name (letters, digits, _ and percent-encoded bytes)`
    let argument: string
    try {
      argument = decodeURIComponent(raw)
    } catch {
      return `'${spec}' is not well-formed percent-encoded UTF-8`
    }
    if (explode && operator !== "?" && operator !== "&")
      return `'${spec}': only query expressions ({?…}, {&…}) may explode a list`
    variables.push({ raw, argument, explode })
  }
  if (operator === "/" && inQuery) return "a path expression ({/…}) after the query began"
  return { kind: "expression", operator, variables, inQuery: inQuery || operator === "?" || operator === "&" }
}

const dotSegment = (segment: string) => {
  let decoded: string
  try {
    decoded = decodeURIComponent(segment)
  } catch {
    return true
  }
  return decoded === "." || decoded === ".."
}

/**
 * Parses a template, refusing what the gateway does not expand (docs/tool-sources.md). The literal before
 * the first expression must hold the scheme, the host and the `/` that starts the path.
 */
export const parseTemplate = (text: string): Parsed => {
  if (text.length > maxUrlLength) return fail(`the template is longer than ${maxUrlLength} characters`)
  const open = text.indexOf("{")
  const head = open === -1 ? text : text.slice(0, open)
  const match = originPattern.exec(head)
  if (match === null) return fail("expected an absolute https:// URL with a literal host and a path")
  if (match[3] === undefined && open !== -1)
    return fail("an expression before the path: the scheme, host, port and the '/' after them must be literal")
  const scheme = match[1]!.toLowerCase() as "https" | "http"
  const authority = match[2]!
  if (authority === "") return fail("the URL has no host")
  if (authority.includes("@")) return fail("user information (user@host) is not allowed in the URL")
  if (!/^[A-Za-z0-9\-._~:[\]]+$/.test(authority)) return fail("the host holds characters a URL host cannot")
  let origin: string
  try {
    const url = new URL(`${scheme}://${authority}/`)
    if (url.username !== "" || url.password !== "" || url.hostname === "") return fail("the URL has no usable host")
    origin = url.origin
  } catch {
    return fail("the host and port do not parse as a URL")
  }
  const rest = text.slice(scheme.length + 3 + authority.length)
  if (rest === "" && open === -1) return { ok: true, template: { origin, scheme, parts: [] } }

  const parts: Array<Part> = []
  let inQuery = false
  let queryExpression = false
  let index = 0
  while (index < rest.length) {
    const brace = rest.indexOf("{", index)
    const literalEnd = brace === -1 ? rest.length : brace
    if (literalEnd > index) {
      const literal = rest.slice(index, literalEnd)
      if (literal.includes("}")) return fail("a '}' without its '{'")
      if (literal.includes("#")) return fail("a fragment ('#') is not sent to the service; remove it")
      if (literal.includes("[") || literal.includes("]")) return fail("'[' and ']' belong in the host only")
      if (!literalCharacter.test(literal))
        return fail(
          "the URL holds a character that must be percent-encoded (spaces, quotes, <, >, \\, ^, `, |, non-ASCII)"
        )
      if (queryExpression) return fail("text after a {?…} expression: use {&…} for more parameters")
      const queryAt = inQuery ? -1 : literal.indexOf("?")
      const pathText = inQuery ? "" : queryAt === -1 ? literal : literal.slice(0, queryAt)
      // The first literal starts with the '/' after the host: its first split is not a segment.
      for (const segment of pathText.split("/").slice(1))
        if (dotSegment(segment)) return fail("the path holds a '.' or '..' segment")
      if (pathText !== "") parts.push({ kind: "literal", text: pathText, inQuery: false })
      if (inQuery) parts.push({ kind: "literal", text: literal, inQuery: true })
      else if (queryAt !== -1) {
        inQuery = true
        parts.push({ kind: "literal", text: literal.slice(queryAt), inQuery: true })
      }
    }
    if (brace === -1) break
    const close = rest.indexOf("}", brace)
    if (close === -1) return fail("a '{' without its '}'")
    const body = rest.slice(brace + 1, close)
    if (body.includes("{")) return fail("an expression inside an expression")
    const part = parseExpression(body, inQuery)
    if (typeof part === "string") return fail(part)
    if (part.kind === "expression") {
      if (part.operator === "?") {
        if (inQuery) return fail("a {?…} expression after the query began: use {&…}")
        inQuery = true
        queryExpression = true
      } else if (part.operator === "&") {
        if (!inQuery) return fail("a {&…} expression before the query began (a literal '?' or a {?…})")
      } else if (queryExpression) {
        return fail("an expression after a {?…} expression: use {&…} for more parameters")
      }
    }
    parts.push(part)
    index = close + 1
  }
  return { ok: true, template: { origin, scheme, parts } }
}

/** The argument names a template reads. */
export const templateArguments = (template: UrlTemplate): ReadonlyArray<string> =>
  template.parts.flatMap((part) => (part.kind === "expression" ? part.variables.map((v) => v.argument) : []))

// ---------------------------------------------------------------------------------------------------
// Expansion

export type Expanded =
  | { readonly ok: true; readonly url: string; readonly origin: string; readonly target: string }
  | {
      readonly ok: false
      readonly message: string
      /** The expansion was refused by the origin and shape check (not a missing or ill-typed value). */
      readonly shape?: boolean
    }

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** UTF-8 percent-encoding of everything but the unreserved characters (encodeURIComponent leaves `!'()*` alone). */
export const encodeValue = (value: string): string =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

type Scalar =
  | { readonly ok: true; readonly text: string | undefined }
  | { readonly ok: false; readonly message: string }

/** An argument's name as a JSON Pointer token (RFC 6901 escapes), for messages. */
const token = (name: string) => name.replaceAll("~", "~0").replaceAll("/", "~1")

const scalarText = (value: unknown, name: string): Scalar => {
  const argument = token(name)
  if (value === undefined || value === null) return { ok: true, text: undefined }
  if (typeof value === "string") {
    if (loneSurrogate.test(value)) return { ok: false, message: `argument /${argument}: not well-formed Unicode` }
    return { ok: true, text: value }
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return { ok: false, message: `argument /${argument}: not a finite number` }
    return { ok: true, text: String(value) }
  }
  if (typeof value === "boolean") return { ok: true, text: String(value) }
  return { ok: false, message: `argument /${argument}: a URL value must be a string, number or boolean` }
}

/** A query value: a scalar, or a list of scalars (joined with ',' or, exploded, repeated). */
const queryTexts = (
  value: unknown,
  name: string
): { ok: true; texts: Array<string> | undefined; list: boolean } | { ok: false; message: string } => {
  const argument = token(name)
  if (Array.isArray(value)) {
    const texts: Array<string> = []
    for (const item of value) {
      const scalar = scalarText(item, name)
      if (!scalar.ok)
        return {
          ok: false,
          message: `argument /${argument}: a list in the URL holds only strings, numbers and booleans`
        }
      if (scalar.text !== undefined) texts.push(scalar.text)
    }
    return { ok: true, texts: texts.length === 0 ? undefined : texts, list: true }
  }
  const scalar = scalarText(value, name)
  if (!scalar.ok && typeof value !== "object") return scalar
  if (!scalar.ok)
    return {
      ok: false,
      message: `argument /${argument}: a URL value must be a string, number, boolean or a list of them`
    }
  return { ok: true, texts: scalar.text === undefined ? undefined : [scalar.text], list: false }
}

const argumentValue = (args: Readonly<Record<string, unknown>>, name: string): unknown =>
  Object.hasOwn(args, name) ? args[name] : undefined

/**
 * Expands a parsed template over a call's arguments, then checks the result has the origin and the path
 * shape the template fixes. A refusal names the argument at fault, never its value.
 */
export const expandTemplate = (template: UrlTemplate, args: Readonly<Record<string, unknown>>): Expanded => {
  let path = ""
  let query = ""
  // Slashes the template fixes: its literal ones, and one per defined {/var}.
  let expectedSlashes = 0
  for (const part of template.parts) {
    if (part.kind === "literal") {
      if (part.inQuery) query += part.text
      else {
        path += part.text
        expectedSlashes += part.text.split("/").length - 1
      }
      continue
    }
    if (part.operator === "" || part.operator === "/") {
      const texts: Array<string> = []
      for (const variable of part.variables) {
        const scalar = scalarText(argumentValue(args, variable.argument), variable.argument)
        if (!scalar.ok) return scalar
        if (scalar.text === undefined) {
          if (part.operator === "/") continue
          return { ok: false, message: `argument /${token(variable.argument)}: required by the URL` }
        }
        if (scalar.text === "" && !part.inQuery)
          return { ok: false, message: `argument /${token(variable.argument)}: must not be empty in the URL's path` }
        texts.push(encodeValue(scalar.text))
      }
      if (part.inQuery) query += texts.join(",")
      else if (part.operator === "/") {
        path += texts.map((text) => `/${text}`).join("")
        expectedSlashes += texts.length
      } else path += texts.join(",")
      continue
    }
    // Query operators: ?name=value&…; an undefined variable is left out.
    const pairs: Array<string> = []
    for (const variable of part.variables) {
      const values = queryTexts(argumentValue(args, variable.argument), variable.argument)
      if (!values.ok) return values
      if (values.texts === undefined) continue
      if (variable.explode) for (const text of values.texts) pairs.push(`${variable.raw}=${encodeValue(text)}`)
      else pairs.push(`${variable.raw}=${values.texts.map(encodeValue).join(",")}`)
    }
    if (pairs.length > 0) query += (part.operator === "?" ? "?" : "&") + pairs.join("&")
  }
  if (path === "") {
    path = "/"
    expectedSlashes = 1
  }
  return checkShape(template, path, query, expectedSlashes)
}

/** Re-parses the built URL: the origin, the path (exactly), its segment count and no dot segment. */
const checkShape = (template: UrlTemplate, path: string, query: string, expectedSlashes: number): Expanded => {
  const built = `${template.origin}${path}${query}`
  if (built.length > maxUrlLength)
    return { ok: false, message: `the URL the arguments make is longer than ${maxUrlLength} characters` }
  const refused: Expanded = {
    ok: false,
    message: "the arguments would change the URL's origin or path shape",
    shape: true
  }
  const segments = path.split("/")
  if (segments.slice(1).some(dotSegment))
    return { ok: false, message: "the arguments would make a '.' or '..' segment of the URL's path", shape: true }
  if (segments.length - 1 !== expectedSlashes) return refused
  let url: URL
  try {
    url = new URL(built)
  } catch {
    return refused
  }
  if (url.origin !== template.origin || url.username !== "" || url.password !== "" || url.hash !== "") return refused
  if (url.pathname !== path || url.href !== built) return refused
  return { ok: true, url: built, origin: template.origin, target: `${path}${query}` }
}
