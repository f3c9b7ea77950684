import type { PointerKit } from "./pointer.js"

/**
 * OpenAPI schemas as the JSON Schema (draft 2020-12) of an HTTP tool's input (docs/tool-sources.md,
 * "OpenAPI imports"). Each tool's input schema stands alone: every schema a `$ref` names is copied
 * once into the input schema's `$defs` and the reference pointed there, so recursive schemas stay
 * recursive instead of expanding without end. What is kept is the JSON Schema vocabulary a validator
 * knows; OpenAPI's own keywords are translated (3.0's `nullable`, boolean `exclusiveMinimum`, `example`)
 * or dropped (`discriminator`, `xml`, `externalDocs`, `x-…`), and so are `pattern` and
 * `patternProperties`: a document's regular expressions would run on the gateway's event loop against
 * strings an agent chooses, where one with catastrophic backtracking stalls every request.
 */

export type OpenApiVersion = "3.0" | "3.1"

export interface NodeBudget {
  left: number
}

export function schemasKit({ isObject, referencePointer, resolveReference, setOwn }: PointerKit) {
  /** A schema that grew past its budget once its references were copied in. */
  class SchemaTooLarge {
    constructor(readonly pointer: string) {}
  }

  /** Schema nodes one tool's input schema may hold, and all the tools of one import together. */
  const MAX_NODES_PER_TOOL = 20_000
  const MAX_NODES_PER_IMPORT = 2_000_000

  const JSON_TYPES = new Set(["null", "boolean", "object", "array", "number", "string", "integer"])

  /** Formats of the JSON Schema specification; OpenAPI's own (`int64`, `byte`, `password`…) are dropped. */
  const STANDARD_FORMATS = new Set([
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex"
  ])

  const NUMBER_KEYWORDS = ["multipleOf", "maximum", "minimum"] as const
  const COUNT_KEYWORDS = [
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties"
  ] as const
  const BOOLEAN_KEYWORDS = ["uniqueItems", "deprecated", "readOnly", "writeOnly"] as const
  const TEXT_KEYWORDS = ["title", "description", "contentEncoding", "contentMediaType"] as const
  const VALUE_KEYWORDS = ["default", "const"] as const
  const SCHEMA_KEYWORDS = [
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties"
  ] as const
  const SCHEMA_LIST_KEYWORDS = ["allOf", "anyOf", "oneOf", "prefixItems"] as const
  const SCHEMA_MAP_KEYWORDS = ["properties", "dependentSchemas"] as const

  /** A name for `$defs`: a component's own name when it is one, letters, digits, `_`, `-`, `.` only. */
  const defName = (pointer: string) => {
    const component = /^\/components\/schemas\/([^/]+)$/.exec(pointer)
    const raw = component?.[1] ?? pointer.slice(1)
    const name = raw
      .replaceAll("~1", "_")
      .replaceAll("~0", "_")
      .replace(/[^A-Za-z0-9_.-]+/g, "_")
      .slice(0, 100)
    return name === "" ? "schema" : name
  }

  /**
   * One tool's input schema under construction: `convert` translates a schema found at a pointer of the
   * document, `defs` then copies in every schema the converted ones referenced (and what those reference).
   */
  class SchemaBundle {
    private readonly names = new Map<string, string>()
    private readonly taken = new Set<string>()
    private readonly queue: Array<{ readonly pointer: string; readonly name: string }> = []
    private nodes = 0

    constructor(
      private readonly document: Record<string, unknown>,
      private readonly version: OpenApiVersion,
      private readonly budget: NodeBudget
    ) {}

    convert(schema: unknown, at: string): unknown {
      if (typeof schema === "boolean") return schema
      if (!isObject(schema)) return {}
      this.count(at)
      const out: Record<string, unknown> = {}
      const ref = schema.$ref
      if (typeof ref === "string") {
        out.$ref = `#/$defs/${this.nameFor(referencePointer(ref))}`
        // OpenAPI 3.0: "siblings of a $ref are ignored"; in 3.1 they apply beside it, as in JSON Schema.
        if (this.version === "3.0") return out
      }
      const type = schema.type
      if (typeof type === "string" && JSON_TYPES.has(type)) out.type = type
      else if (Array.isArray(type)) {
        const types = type.filter((each): each is string => typeof each === "string" && JSON_TYPES.has(each))
        if (types.length > 0) out.type = types
      }
      if (Array.isArray(schema.enum) && schema.enum.length > 0) out.enum = schema.enum
      for (const key of VALUE_KEYWORDS) if (Object.hasOwn(schema, key)) out[key] = schema[key]
      for (const key of NUMBER_KEYWORDS) if (typeof schema[key] === "number") out[key] = schema[key]
      for (const key of COUNT_KEYWORDS) {
        const value = schema[key]
        if (typeof value === "number" && Number.isInteger(value) && value >= 0) out[key] = value
      }
      for (const key of BOOLEAN_KEYWORDS) if (typeof schema[key] === "boolean") out[key] = schema[key]
      for (const key of TEXT_KEYWORDS) if (typeof schema[key] === "string") out[key] = schema[key]
      this.bounds(schema, out)
      if (typeof schema.format === "string" && STANDARD_FORMATS.has(schema.format)) out.format = schema.format
      if (Array.isArray(schema.examples)) out.examples = schema.examples
      else if (Object.hasOwn(schema, "example")) out.examples = [schema.example]
      if (Array.isArray(schema.required)) {
        const required = [...new Set(schema.required.filter((name): name is string => typeof name === "string"))]
        if (required.length > 0) out.required = required
      }
      if (isObject(schema.dependentRequired)) out.dependentRequired = schema.dependentRequired
      for (const key of SCHEMA_KEYWORDS) {
        if (Object.hasOwn(schema, key)) out[key] = this.convert(schema[key], `${at}/${key}`)
      }
      for (const key of SCHEMA_LIST_KEYWORDS) {
        const list = schema[key]
        if (Array.isArray(list) && list.length > 0) {
          out[key] = list.map((each, index) => this.convert(each, `${at}/${key}/${index}`))
        }
      }
      for (const key of SCHEMA_MAP_KEYWORDS) {
        const map = schema[key]
        if (!isObject(map)) continue
        const converted: Record<string, unknown> = {}
        for (const [name, each] of Object.entries(map)) {
          setOwn(
            converted,
            name,
            this.convert(each, `${at}/${key}/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`)
          )
        }
        out[key] = converted
      }
      // Without its patternProperties, additionalProperties would refuse what those patterns allowed.
      if (Object.hasOwn(schema, "additionalProperties") && !Object.hasOwn(schema, "patternProperties")) {
        out.additionalProperties = this.convert(schema.additionalProperties, `${at}/additionalProperties`)
      }
      return this.version === "3.0" && schema.nullable === true ? nullable(out) : out
    }

    /** `$defs` for every schema referenced so far, or undefined when none was. */
    defs(): Record<string, unknown> | undefined {
      const defs: Record<string, unknown> = {}
      for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
        setOwn(defs, next.name, this.convert(resolveReference(this.document, `#${next.pointer}`), next.pointer))
      }
      return Object.keys(defs).length === 0 ? undefined : defs
    }

    private count(at: string) {
      this.nodes += 1
      this.budget.left -= 1
      if (this.nodes > MAX_NODES_PER_TOOL || this.budget.left < 0) throw new SchemaTooLarge(at)
    }

    private nameFor(pointer: string): string {
      const known = this.names.get(pointer)
      if (known !== undefined) return known
      const base = defName(pointer)
      let name = base
      for (let suffix = 2; this.taken.has(name); suffix += 1) name = `${base}_${suffix}`
      this.names.set(pointer, name)
      this.taken.add(name)
      this.queue.push({ pointer, name })
      return name
    }

    /** 3.0's boolean exclusive bounds become 2020-12's numeric ones; 3.1's are numeric already. */
    private bounds(schema: Record<string, unknown>, out: Record<string, unknown>) {
      for (const [exclusive, inclusive] of [
        ["exclusiveMinimum", "minimum"],
        ["exclusiveMaximum", "maximum"]
      ] as const) {
        const value = schema[exclusive]
        if (typeof value === "number") out[exclusive] = value
        else if (value === true && typeof schema[inclusive] === "number") {
          out[exclusive] = schema[inclusive]
          delete out[inclusive]
        }
      }
    }
  }

  /** OpenAPI 3.0's `nullable: true`: null is allowed as well. */
  const nullable = (schema: Record<string, unknown>): Record<string, unknown> => {
    const out = { ...schema }
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null]
    if (typeof out.type === "string") {
      out.type = [out.type, "null"]
      return out
    }
    if (Array.isArray(out.type)) {
      if (!out.type.includes("null")) out.type = [...out.type, "null"]
      return out
    }
    return { anyOf: [out, { type: "null" }] }
  }

  return { SchemaBundle, SchemaTooLarge, MAX_NODES_PER_TOOL, MAX_NODES_PER_IMPORT }
}

export type SchemasKit = ReturnType<typeof schemasKit>
