import type { ErrorObject, ValidateFunction } from "ajv"
import { type Compiled, compileSchema } from "../../json-schema.js"

/**
 * The input schemas of HTTP tools, compiled with ajv (docs/decisions.md, "HTTP tools: argument
 * validation and URL templates"): draft 2020-12 (the MCP default when `$schema` is absent) and draft-07,
 * with patterns matched in linear time (src/json-schema.ts).
 * Each schema is compiled once and kept in the bounded cache of src/json-schema.ts, so a reload that
 * keeps a tool keeps its compiled validator.
 */

const draft2020 = "https://json-schema.org/draft/2020-12/schema"
const draft07 = "http://json-schema.org/draft-07/schema"

export type { Compiled } from "../../json-schema.js"

const dialectOf = (schema: Readonly<Record<string, unknown>>): "modern" | "legacy" | undefined => {
  const declared = schema["$schema"]
  if (declared === undefined) return "modern"
  if (typeof declared !== "string") return undefined
  const bare = declared.replace(/#$/, "")
  if (bare === draft2020) return "modern"
  if (bare === draft07 || bare === draft07.replace("http:", "https:")) return "legacy"
  return undefined
}

/** Validators by the schema object too: a generation's tools keep theirs, so most calls skip the JSON key. */
const byObject = new WeakMap<object, ValidateFunction>()

/**
 * The validator of an HTTP tool's input schema (2020-12 or draft-07), compiled or found; a schema ajv
 * refuses is an error with ajv's reason.
 */
export const compileInputSchema = (schema: Readonly<Record<string, unknown>>): Compiled => {
  const same = byObject.get(schema)
  if (same !== undefined) return { ok: true, validate: same }
  const found = compileByText(schema)
  if (found.ok) byObject.set(schema, found.validate)
  return found
}

const compileByText = (schema: Readonly<Record<string, unknown>>): Compiled => {
  const dialect = dialectOf(schema)
  if (dialect === undefined)
    return { ok: false, message: "$schema must be draft 2020-12 or draft-07 (or absent: 2020-12)" }
  return compileSchema(schema, dialect === "modern" ? "2020-12" : "draft-07")
}

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
