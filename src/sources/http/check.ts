import { headerName, headerValue } from "../../http/header-syntax.js"
import type { HttpEndpoint, HttpToolSpec } from "../schema.js"
import { framingHeaders, reservedHeaders } from "./headers.js"
import { compileInputSchema } from "./input-schema.js"
import { pointerTokens } from "./pointer.js"
import { parseTemplate, templateArguments } from "./template.js"

/** One problem with an HTTP tool's definition: where (a JSON Pointer into the tool) and what. */
export interface SpecProblem {
  readonly pointer: string
  readonly message: string
}

const escapeToken = (name: string) => name.replaceAll("~", "~0").replaceAll("/", "~1")

/**
 * The save-time checks of an HTTP tool (the Management API and the OpenAPI importer run them): the URL
 * template, its literal origin, the input schema, the body and header pointers. Empty: valid. The rules
 * are in docs/tool-sources.md ("HTTP tools").
 */
export const checkHttpTool = (
  endpoint: Pick<HttpEndpoint, "allow_insecure_http">,
  spec: HttpToolSpec
): ReadonlyArray<SpecProblem> => {
  const problems: Array<SpecProblem> = []
  const parsed = parseTemplate(spec.url)
  if (!parsed.ok) problems.push({ pointer: "/url", message: parsed.message })
  else if (parsed.template.scheme === "http" && !endpoint.allow_insecure_http)
    problems.push({ pointer: "/url", message: "http:// needs allow_insecure_http on the endpoint; use https://" })

  const schema = spec.input_schema
  const compiled = compileInputSchema(schema)
  if (!compiled.ok) problems.push({ pointer: "/input_schema", message: compiled.message })
  if (schema["type"] !== "object") problems.push({ pointer: "/input_schema/type", message: 'must be "object"' })
  // Arguments the schema allows: with `additionalProperties: false`, only its declared properties.
  const properties =
    typeof schema["properties"] === "object" && schema["properties"] !== null ? schema["properties"] : {}
  const closed = schema["additionalProperties"] === false
  const declared = (name: string) => !closed || Object.hasOwn(properties, name)

  if (parsed.ok)
    for (const name of templateArguments(parsed.template))
      if (!declared(name))
        problems.push({ pointer: "/url", message: `the variable ${name} is not a property of the input schema` })

  const checkPointer = (where: string, pointer: string) => {
    const tokens = pointerTokens(pointer)
    if (tokens === undefined || tokens.length === 0)
      problems.push({ pointer: where, message: "expected a JSON Pointer to an argument (/name; ~0 and ~1 escapes)" })
    else if (!declared(tokens[0]!))
      problems.push({ pointer: where, message: `the argument ${tokens[0]} is not a property of the input schema` })
  }
  if (spec.body !== undefined) {
    if (spec.method === "GET" || spec.method === "HEAD")
      problems.push({ pointer: "/body", message: `a ${spec.method} request has no body` })
    checkPointer("/body/argument", spec.body.argument)
  }
  const seen = new Set<string>()
  for (const [name, pointer] of Object.entries(spec.argument_headers)) {
    const where = `/argument_headers/${escapeToken(name)}`
    const lower = name.toLowerCase()
    if (!headerName.test(name)) problems.push({ pointer: where, message: "not an HTTP header name" })
    else if (reservedHeaders.has(lower))
      problems.push({
        pointer: where,
        message: `${lower} is set by the gateway or the credentials, never by an argument`
      })
    else if (seen.has(lower))
      problems.push({ pointer: where, message: "the header is named twice (names are case-insensitive)" })
    seen.add(lower)
    checkPointer(where, pointer)
  }
  return problems
}

/**
 * The save-time checks of an HTTP endpoint's fixed headers (an HTTP tool's or an OpenAPI import's
 * `headers`, values in the clear as the API received them): names are header names, not framing headers
 * the gateway sets, not named twice; values printable ASCII. Pointers are `/headers/<name>`; a message
 * never holds the value.
 */
export const checkEndpointHeaders = (headers: Readonly<Record<string, string>>): ReadonlyArray<SpecProblem> => {
  const problems: Array<SpecProblem> = []
  const seen = new Set<string>()
  for (const [name, value] of Object.entries(headers)) {
    const where = `/headers/${escapeToken(name)}`
    const lower = name.toLowerCase()
    if (!headerName.test(name)) problems.push({ pointer: where, message: "not an HTTP header name" })
    else if (framingHeaders.has(lower)) problems.push({ pointer: where, message: `${lower} is set by the gateway` })
    else if (seen.has(lower))
      problems.push({ pointer: where, message: "the header is named twice (names are case-insensitive)" })
    else if (!headerValue.test(value))
      problems.push({ pointer: where, message: "the value must be printable ASCII, without CR, LF or NUL" })
    seen.add(lower)
  }
  return problems
}
