import type { HttpToolSpec } from "../schema.js"
import type { RefusalKit } from "./errors.js"
import type { PointerKit } from "./pointer.js"
import type { NodeBudget, OpenApiVersion, SchemasKit } from "./schemas.js"
import type { ServerUrlKit } from "./server-url.js"
import type { TemplateKit } from "./template.js"

/**
 * Each operation of a validated OpenAPI document as an HTTP tool (docs/tool-sources.md, "OpenAPI
 * imports"): its name, method, URL template, input schema, body and header arguments.
 *
 * A kit, run on the import's worker thread from its source text (pointer.ts, parse.ts): nothing but its
 * parameters and globals.
 */

/** What an import leaves out of a tool, or the tool it leaves out, and why. */
export interface Skipped {
  readonly pointer: string
  readonly reason: string
}

export interface Mapped {
  readonly tools: ReadonlyArray<HttpToolSpec>
  readonly skipped: ReadonlyArray<Skipped>
}

export interface MapInput {
  readonly document: Record<string, unknown>
  readonly version: OpenApiVersion
  /** Replaces every `servers[0].url` of the document. */
  readonly serverUrl?: string | undefined
  /** Where the document was fetched from: relative server URLs resolve against it. */
  readonly documentUrl?: string | undefined
}

export function operationsKit(
  { escapeSegment, isObject, pointerOf, referencePointer, resolveReference, setOwn }: PointerKit,
  { isVarname, literal, splitPath }: TemplateKit,
  { MAX_NODES_PER_IMPORT, SchemaBundle, SchemaTooLarge }: SchemasKit,
  { serverBase }: ServerUrlKit,
  { Refusal }: RefusalKit
) {
  /** Tools one import may yield. */
  const MAX_TOOLS = 10_000
  const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const
  const TOOL_METHODS: Record<string, HttpToolSpec["method"] | undefined> = {
    get: "GET",
    head: "HEAD",
    post: "POST",
    put: "PUT",
    patch: "PATCH",
    delete: "DELETE"
  }

  /** Header parameters OpenAPI says to ignore: the request's own headers say these. */
  const IGNORED_HEADERS = new Set(["accept", "content-type", "authorization"])
  /** Headers an argument may not set: they frame the request or belong to the connection. */
  const FORBIDDEN_HEADERS = new Set([
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "keep-alive",
    "expect",
    "cookie",
    "proxy-authorization",
    "proxy-connection"
  ])
  const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

  /** A tool name from an operationId (or the fallback): outside letters, digits, `_`, `-`, `.` becomes `_`. */
  const toolName = (raw: string): string =>
    raw
      .replace(/[^A-Za-z0-9_.-]+/g, "_")
      .replace(/_+/g, "_")
      .slice(0, 128)

  /** The name of an operation without an operationId: `<method>_<path segments>`, e.g. `get_pets_petId`. */
  const fallbackName = (method: string, path: string): string => {
    const rest = toolName(path.replace(/[{}]/g, "").replaceAll("/", "_")).replace(/^_+|_+$/g, "")
    return toolName(rest === "" ? method : `${method}_${rest}`)
  }

  /** Follows `$ref`s (Reference Objects) to the object they name; the worker checked each resolves. */
  const deref = (document: Record<string, unknown>, value: unknown, at: string) => {
    let here = value
    let pointer = at
    for (let hops = 0; isObject(here) && typeof here.$ref === "string"; hops += 1) {
      if (hops > 32) return { value: undefined, pointer }
      pointer = referencePointer(here.$ref)
      here = resolveReference(document, here.$ref)
    }
    return { value: isObject(here) ? here : undefined, pointer }
  }

  interface Parameter {
    readonly name: string
    readonly in: "path" | "query" | "header" | "cookie"
    readonly required: boolean
    readonly spec: Record<string, unknown>
    readonly pointer: string
  }

  /** The path item's parameters overridden by the operation's, by name and location. */
  const parametersOf = (
    document: Record<string, unknown>,
    pathItem: Record<string, unknown>,
    operation: Record<string, unknown>,
    pathPointer: string,
    operationPointer: string
  ): ReadonlyArray<Parameter> => {
    const byKey = new Map<string, Parameter>()
    for (const [list, at] of [
      [pathItem.parameters, `${pathPointer}/parameters`],
      [operation.parameters, `${operationPointer}/parameters`]
    ] as const) {
      if (!Array.isArray(list)) continue
      list.forEach((raw, index) => {
        const { value } = deref(document, raw, `${at}/${index}`)
        if (value === undefined || typeof value.name !== "string") return
        const where = value.in
        if (where !== "path" && where !== "query" && where !== "header" && where !== "cookie") return
        const key = `${where}:${where === "header" ? value.name.toLowerCase() : value.name}`
        byKey.set(key, {
          name: value.name,
          in: where,
          required: value.required === true || where === "path",
          spec: value,
          pointer: `${at}/${index}`
        })
      })
    }
    return [...byKey.values()]
  }

  /** Argument names of one tool: each distinct, renamable ones given a suffix when taken. */
  class ArgumentNames {
    private readonly taken = new Set<string>()

    fixed(name: string): boolean {
      if (this.taken.has(name)) return false
      this.taken.add(name)
      return true
    }

    free(wanted: string, suffix: string): string {
      let name = wanted
      if (this.taken.has(name)) name = `${wanted}_${suffix}`
      for (let n = 2; this.taken.has(name); n += 1) name = `${wanted}_${suffix}_${n}`
      this.taken.add(name)
      return name
    }
  }

  /** An RFC 6570 variable name for a path parameter: its own when it is one, else a sanitized form. */
  const pathVariable = (name: string) => {
    if (isVarname(name)) return name
    const cleaned = name.replace(/[^A-Za-z0-9_]+/g, "_").replace(/^_+|_+$/g, "")
    return cleaned === "" ? "parameter" : cleaned
  }

  const isJsonMedia = (type: string) => /^application\/(?:[A-Za-z0-9.!#$&^_-]+\+)?json\s*(?:;.*)?$/i.test(type)

  class Unmappable {
    constructor(
      readonly pointer: string,
      readonly reason: string
    ) {}
  }

  interface OperationContext {
    readonly document: Record<string, unknown>
    readonly version: OpenApiVersion
    /** The server URL, escaped as a template literal. */
    readonly base: string
    readonly path: string
    readonly pathItem: Record<string, unknown>
    readonly pathPointer: string
    readonly method: (typeof METHODS)[number]
    readonly operation: Record<string, unknown>
    readonly operationPointer: string
    readonly budget: NodeBudget
    readonly skipped: Array<Skipped>
  }

  /** One operation as a tool without its name; throws Unmappable (skip it) or a Refusal. */
  const operationTool = (context: OperationContext): Omit<HttpToolSpec, "name"> => {
    const { document, operation, operationPointer: at, skipped } = context
    const method = TOOL_METHODS[context.method]
    if (method === undefined) {
      throw new Unmappable(at, `HTTP tools do not send ${context.method.toUpperCase()} requests`)
    }
    const parts = splitPath(context.path)
    if ("problem" in parts) throw new Refusal(context.pathPointer, parts.problem)

    const bundle = new SchemaBundle(document, context.version, context.budget)
    const names = new ArgumentNames()
    const properties: Record<string, unknown> = {}
    const required: Array<string> = []
    const argumentHeaders: Record<string, string> = {}
    const queryVariables: Array<string> = []
    const pathVariables = new Map<string, string>()

    const argumentSchema = (parameter: Parameter) => {
      const { spec, pointer } = parameter
      let schema: unknown
      if (Object.hasOwn(spec, "schema")) schema = bundle.convert(spec.schema, `${pointer}/schema`)
      else {
        const media = isObject(spec.content) ? Object.keys(spec.content)[0] : undefined
        schema = { type: "string", ...(media === undefined ? {} : { contentMediaType: media }) }
      }
      const extra: Record<string, unknown> = {}
      if (typeof spec.description === "string") extra.description = spec.description
      if (spec.deprecated === true) extra.deprecated = true
      return isObject(schema) ? { ...schema, ...extra } : schema
    }
    const add = (name: string, parameter: Parameter) => {
      setOwn(properties, name, argumentSchema(parameter))
      if (parameter.required) required.push(name)
    }
    /** A parameter a tool cannot send: the operation is left out when it is required, else the parameter. */
    const leaveOut = (parameter: Parameter, why: string) => {
      if (parameter.required) throw new Unmappable(at, `its required parameter ${parameter.pointer} ${why}`)
      skipped.push({ pointer: parameter.pointer, reason: `parameter left out of the tool: it ${why}` })
    }

    const parameters = parametersOf(document, context.pathItem, operation, context.pathPointer, at)
    // Query names are written into the URL as they are, so they are taken first; the others may be renamed.
    for (const parameter of parameters.filter((each) => each.in === "query")) {
      const style = parameter.spec.style ?? "form"
      if (style !== "form") {
        leaveOut(parameter, `is sent in the ${String(style)} style, which a URL template cannot write`)
        continue
      }
      if (!isVarname(parameter.name) || !names.fixed(parameter.name)) {
        leaveOut(parameter, "has a name a URL template cannot write as a query parameter")
        continue
      }
      const schema = isObject(parameter.spec.schema) ? parameter.spec.schema : {}
      const composite = schema.type === "array" || schema.type === "object"
      queryVariables.push(composite && parameter.spec.explode !== false ? `${parameter.name}*` : parameter.name)
      add(parameter.name, parameter)
    }
    const declaredPath = new Set<string>()
    for (const parameter of parameters.filter((each) => each.in === "path")) {
      declaredPath.add(parameter.name)
      if (!parts.some((part) => "parameter" in part && part.parameter === parameter.name)) {
        throw new Refusal(
          `${parameter.pointer}/name`,
          `the path parameter "${parameter.name}" is not in the path ${JSON.stringify(context.path)}`
        )
      }
      const style = parameter.spec.style ?? "simple"
      if (style !== "simple") {
        throw new Unmappable(at, `its path parameter ${parameter.pointer} is sent in the ${String(style)} style`)
      }
      const name = names.free(pathVariable(parameter.name), "path")
      pathVariables.set(parameter.name, name)
      add(name, parameter)
    }
    for (const part of parts) {
      if ("parameter" in part && !declaredPath.has(part.parameter)) {
        throw new Refusal(at, `the path's {${part.parameter}} is not declared as a path parameter of the operation`)
      }
    }
    for (const parameter of parameters.filter((each) => each.in === "header")) {
      const lower = parameter.name.toLowerCase()
      if (IGNORED_HEADERS.has(lower)) continue
      if (!TOKEN.test(parameter.name) || FORBIDDEN_HEADERS.has(lower) || lower.startsWith("proxy-")) {
        leaveOut(parameter, "names a header an argument may not set")
        continue
      }
      const name = names.free(parameter.name, "header")
      setOwn(argumentHeaders, parameter.name, `/${escapeSegment(name)}`)
      add(name, parameter)
    }
    for (const parameter of parameters.filter((each) => each.in === "cookie")) {
      leaveOut(parameter, "is a cookie, which HTTP tools do not send")
    }

    let body: HttpToolSpec["body"]
    if (operation.requestBody !== undefined && method !== "GET" && method !== "HEAD") {
      const { value: requestBody, pointer } = deref(document, operation.requestBody, `${at}/requestBody`)
      const content = isObject(requestBody?.content) ? requestBody.content : {}
      const types = Object.keys(content)
      const json = types.find((type) => type.toLowerCase() === "application/json") ?? types.find(isJsonMedia)
      if (json === undefined) {
        const why = `is sent only as ${types.join(", ") || "nothing"}, not JSON`
        if (requestBody?.required === true) throw new Unmappable(at, `its required request body ${why}`)
        skipped.push({ pointer: `${at}/requestBody`, reason: `request body left out of the tool: it ${why}` })
      } else {
        const media = content[json]
        const name = names.free("body", "argument")
        const schema = bundle.convert(
          isObject(media) && Object.hasOwn(media, "schema") ? media.schema : {},
          `${pointer}/content/${escapeSegment(json)}/schema`
        )
        setOwn(
          properties,
          name,
          isObject(schema) && typeof requestBody?.description === "string"
            ? { ...schema, description: requestBody.description }
            : schema
        )
        if (requestBody?.required === true) required.push(name)
        body = { argument: `/${escapeSegment(name)}` }
      }
    }

    const path = parts
      .map((part) => ("literal" in part ? literal(part.literal) : `{${pathVariables.get(part.parameter)}}`))
      .join("")
    const query = queryVariables.length === 0 ? "" : `{?${queryVariables.join(",")}}`
    const defs = bundle.defs()
    const summary = typeof operation.summary === "string" ? operation.summary.trim() : ""
    const description = typeof operation.description === "string" ? operation.description.trim() : ""
    return {
      ...(summary === "" ? {} : { title: summary }),
      description: description === "" ? summary : description,
      method,
      url: `${context.base}${path}${query}`,
      input_schema: {
        type: "object",
        properties,
        ...(required.length === 0 ? {} : { required }),
        additionalProperties: false,
        ...(defs === undefined ? {} : { $defs: defs })
      },
      ...(body === undefined ? {} : { body }),
      argument_headers: argumentHeaders
    }
  }

  /**
   * Every operation of the document, in document order (paths, then get, put, post, delete, options,
   * head, patch, trace), as a tool. Two operations whose names come out the same are refused, naming
   * both: a tool's name is what policy rules match, so it must not shift when the document changes.
   * Throws a Refusal.
   */
  const mapOperations = (input: MapInput): Mapped => {
    const { document } = input
    const tools: Array<HttpToolSpec> = []
    const skipped: Array<Skipped> = []
    const named = new Map<string, string>()
    const budget: NodeBudget = { left: MAX_NODES_PER_IMPORT }
    const bases = new Map<string, string>()
    /** The base of an operation: the nearest servers (operation, path item, document), escaped once. */
    const baseOf = (holders: ReadonlyArray<readonly [Record<string, unknown>, string]>) => {
      const [holder, at] = holders.find(
        ([each]) => input.serverUrl === undefined && Array.isArray(each.servers) && each.servers.length > 0
      ) ?? [document, ""]
      const known = bases.get(at)
      if (known !== undefined) return known
      const base = literal(serverBase(holder, at, input.serverUrl, input.documentUrl))
      bases.set(at, base)
      return base
    }
    const paths = isObject(document.paths) ? document.paths : {}
    for (const [path, rawItem] of Object.entries(paths)) {
      const pathPointer = pointerOf("paths", path)
      const { value: pathItem } = deref(document, rawItem, pathPointer)
      if (pathItem === undefined) continue
      for (const method of METHODS) {
        const operation = pathItem[method]
        if (!isObject(operation)) continue
        const operationPointer = `${pathPointer}/${method}`
        const base = baseOf([
          [operation, operationPointer],
          [pathItem, pathPointer]
        ])
        let tool: Omit<HttpToolSpec, "name">
        try {
          tool = operationTool({
            document,
            version: input.version,
            base,
            path,
            pathItem,
            pathPointer,
            method,
            operation,
            operationPointer,
            budget,
            skipped
          })
        } catch (error) {
          if (error instanceof Unmappable) {
            skipped.push({ pointer: error.pointer, reason: `operation left out: ${error.reason}` })
            continue
          }
          if (error instanceof SchemaTooLarge) {
            throw new Refusal(
              operationPointer,
              `the operation's input schema is too large once its references are copied in (past ${error.pointer})`
            )
          }
          throw error
        }
        // An operationId with no letter or digit left once sanitized names nothing: the fallback does.
        const hasId = typeof operation.operationId === "string" && /[A-Za-z0-9]/.test(toolName(operation.operationId))
        const name = hasId ? toolName(operation.operationId as string) : fallbackName(method, path)
        const namePointer = hasId ? `${operationPointer}/operationId` : operationPointer
        const earlier = named.get(name)
        if (earlier !== undefined) {
          throw new Refusal(namePointer, `the tool name "${name}" is also the name of the operation at ${earlier}`)
        }
        named.set(name, namePointer)
        if (tools.length >= MAX_TOOLS) throw new Refusal("/paths", `the document has more than ${MAX_TOOLS} operations`)
        tools.push({ name, ...tool })
      }
    }
    return { tools, skipped }
  }

  return { mapOperations, toolName, fallbackName, MAX_TOOLS }
}

export type OperationsKit = ReturnType<typeof operationsKit>
