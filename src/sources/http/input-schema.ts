import { Ajv, type ErrorObject, type ValidateFunction } from "ajv"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"

/**
 * The input schemas of HTTP tools, compiled with ajv (docs/decisions.md, "HTTP tools: argument
 * validation and URL templates"): draft 2020-12 (the MCP default when `$schema` is absent) and draft-07.
 * Each schema is compiled once and kept in a bounded cache keyed by its JSON text, so a reload that
 * keeps a tool keeps its compiled validator and a process never holds more than `maxCompiled`.
 */

const draft2020 = "https://json-schema.org/draft/2020-12/schema"
const draft07 = "http://json-schema.org/draft-07/schema"

/** Unknown keywords (OpenAPI's `example`, `nullable`, `xml`) are annotations, not errors; formats are checked. */
const options = { strict: false, allErrors: false, validateFormats: true } as const

const makeAjv = <A extends Ajv | Ajv2020>(ajv: A): A => {
  addFormats.default(ajv)
  return ajv
}

let dialects: { readonly modern: Ajv2020; readonly legacy: Ajv } | undefined
const ajvs = () => {
  dialects ??= { modern: makeAjv(new Ajv2020(options)), legacy: makeAjv(new Ajv(options)) }
  return dialects
}

export const maxCompiled = 512
const compiled = new Map<string, ValidateFunction>()

export type Compiled =
  | { readonly ok: true; readonly validate: ValidateFunction }
  | { readonly ok: false; readonly message: string }

const dialectOf = (schema: Readonly<Record<string, unknown>>): "modern" | "legacy" | undefined => {
  const declared = schema["$schema"]
  if (declared === undefined) return "modern"
  if (typeof declared !== "string") return undefined
  const bare = declared.replace(/#$/, "")
  if (bare === draft2020) return "modern"
  if (bare === draft07 || bare === draft07.replace("http:", "https:")) return "legacy"
  return undefined
}

/** Compiles (or finds) the validator of a schema; a schema ajv refuses is an error with ajv's reason. */
/** By the schema object too: a generation's tools keep theirs, so most calls skip the JSON key. */
const byObject = new WeakMap<object, ValidateFunction>()

export const compileInputSchema = (schema: Readonly<Record<string, unknown>>): Compiled => {
  const same = byObject.get(schema)
  if (same !== undefined) return { ok: true, validate: same }
  const found = compileByText(schema)
  if (found.ok) byObject.set(schema, found.validate)
  return found
}

const compileByText = (schema: Readonly<Record<string, unknown>>): Compiled => {
  const key = JSON.stringify(schema)
  const known = compiled.get(key)
  if (known !== undefined) {
    // Most recently used last: the first key is the one to drop.
    compiled.delete(key)
    compiled.set(key, known)
    return { ok: true, validate: known }
  }
  const dialect = dialectOf(schema)
  if (dialect === undefined)
    return { ok: false, message: "$schema must be draft 2020-12 or draft-07 (or absent: 2020-12)" }
  const ajv = ajvs()[dialect]
  // A private copy: ajv keys its own cache by the object, and a schema's $id must not collide with
  // another tool's — the compiled function is all that is kept.
  const copy = JSON.parse(key) as Record<string, unknown>
  let validate: ValidateFunction
  try {
    validate = ajv.compile(copy)
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message.slice(0, 300) : "the schema does not compile" }
  } finally {
    try {
      ajv.removeSchema(copy)
    } catch {
      // Nothing was added.
    }
  }
  if (compiled.size >= maxCompiled) {
    const oldest = compiled.keys().next()
    if (oldest.done !== true) compiled.delete(oldest.value)
  }
  compiled.set(key, validate)
  return { ok: true, validate }
}

/** How many validators are cached (tests). */
export const compiledCount = (): number => compiled.size

/** The first error as "argument <pointer>: <what>", never the value. */
export const describeError = (errors: ReadonlyArray<ErrorObject> | null | undefined): string => {
  const error = errors?.[0]
  if (error === undefined) return "arguments: do not match the tool's input schema"
  const params = error.params as Record<string, unknown>
  const token = (name: string) => name.replaceAll("~", "~0").replaceAll("/", "~1")
  let path = error.instancePath
  if (error.keyword === "required" && typeof params["missingProperty"] === "string")
    path += `/${token(params["missingProperty"])}`
  if (error.keyword === "additionalProperties" && typeof params["additionalProperty"] === "string")
    path += `/${token(params["additionalProperty"])}`
  if (error.keyword === "unevaluatedProperties" && typeof params["unevaluatedProperty"] === "string")
    path += `/${token(params["unevaluatedProperty"])}`
  const what =
    error.keyword === "required"
      ? "is required"
      : error.keyword === "additionalProperties" || error.keyword === "unevaluatedProperties"
        ? "is not allowed"
        : (error.message ?? "is not valid")
  return `argument ${path === "" ? "/" : path}: ${what}`
}
