import { Ajv, type CodeOptions, type ValidateFunction } from "ajv"
import { Ajv2019 } from "ajv/dist/2019.js"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { RE2JS } from "re2js"

/**
 * The JSON Schema validators the gateway runs against what others send (docs/decisions.md, "Regular
 * expressions in schemas run in linear time"): HTTP tools' input schemas against a caller's arguments, a
 * backend's output schemas against its own results. A schema's `pattern`, `patternProperties` and
 * `propertyNames` patterns are matched by RE2 (re2js: linear in the input, whatever the pattern), not by
 * the JavaScript engine, whose backtracking lets `^(a+)+$` against 40 `a` and a `!` hold the event loop,
 * and so every request, for hours. RE2 has no lookaround and no backreference: a schema using them does
 * not compile, with RE2's reason. JavaScript spellings RE2 lacks (`\u00e9`, `\cJ`, `(?<name>…)`) are
 * translated first; `\d`, `\w` and `\s` are ASCII in RE2.
 */
export const linearRegExp: NonNullable<CodeOptions["regExp"]> = Object.assign(
  (pattern: string) => {
    let compiled: RE2JS
    try {
      compiled = RE2JS.compile(RE2JS.translateRegExp(pattern))
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      throw new Error(
        `pattern ${JSON.stringify(pattern.slice(0, 100))} is not supported: ${reason} (patterns are matched in linear time, in RE2 syntax: no lookaround, no backreference)`
      )
    }
    // ajv keys the compiled patterns of an engine by `toString()`: each must name its own pattern, or
    // every schema would be checked against the first pattern the engine met.
    return { test: (input: string) => compiled.test(input), toString: () => `re2:${pattern}` }
  },
  // Only used by ajv's standalone code generation, which the gateway does not use.
  { code: "re2js.RE2JS.compile(pattern)" }
)

/** Unknown keywords (OpenAPI's `example`, `nullable`, `xml`) are annotations, not errors; formats are checked. */
const options = { strict: false, allErrors: false, validateFormats: true, code: { regExp: linearRegExp } } as const

export type Dialect = "2020-12" | "2019-09" | "draft-07"

const engines = new Map<Dialect, Ajv>()

/** The one validator engine of a dialect (built on first use, formats added). */
export const ajvFor = (dialect: Dialect): Ajv => {
  let engine = engines.get(dialect)
  if (engine === undefined) {
    engine =
      dialect === "2020-12" ? new Ajv2020(options) : dialect === "2019-09" ? new Ajv2019(options) : new Ajv(options)
    addFormats.default(engine)
    engines.set(dialect, engine)
  }
  return engine
}

export const maxCompiled = 512
const compiled = new Map<string, ValidateFunction>()

export type Compiled =
  | { readonly ok: true; readonly validate: ValidateFunction }
  | { readonly ok: false; readonly message: string }

/**
 * Compiles (or finds) the validator of a schema in a dialect; a schema ajv refuses is an error with
 * ajv's reason. Validators are kept in one bounded cache keyed by dialect and JSON text (the entry used
 * longest ago goes first), so a process never holds more than `maxCompiled`, however many schemas
 * backends and tool sources list over its life.
 */
export const compileSchema = (schema: Readonly<Record<string, unknown>>, dialect: Dialect): Compiled => {
  const text = JSON.stringify(schema)
  const key = `${dialect}\n${text}`
  const known = compiled.get(key)
  if (known !== undefined) {
    // Most recently used last: the first key is the one to drop.
    compiled.delete(key)
    compiled.set(key, known)
    return { ok: true, validate: known }
  }
  const ajv = ajvFor(dialect)
  // A private copy: ajv keys its own cache by the object, and a schema's $id must not collide with
  // another schema's — the compiled function is all that is kept.
  const copy = JSON.parse(text) as Record<string, unknown>
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
