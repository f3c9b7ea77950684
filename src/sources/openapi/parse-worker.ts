import type { RefusalKit } from "./errors.js"
import type { OperationsKit } from "./operations.js"

/**
 * The CPU-heavy part of an OpenAPI import, run on a worker thread (parse.ts) so that a large document
 * never stalls the gateway's event loop and its memory is bounded apart from the gateway's: the
 * document's bytes hashed, parsed (JSON, or YAML with few aliases), every `$ref` checked to be internal
 * and to point at something, validated against the OpenAPI 3.0 / 3.1 schema by
 * `@scalar/openapi-parser` (docs/decisions.md, "OpenAPI imports: the parser"), then mapped to tools
 * (operations.ts). Only the tools go back to the main thread, as JSON text.
 *
 * This function's source text, after the mapping's kits', is the worker's whole program (`new
 * Worker(source, { eval: true })`), as in src/events/archive/record-worker.ts: it uses nothing but its
 * parameters and globals, and loads the parser and `yaml` from the paths the main thread resolved.
 * `importModule` is `import()` written in the worker's own source (parse.ts): a test runner rewrites
 * the `import()`s of the files it loads.
 */
export function parseWorker(
  load: NodeJS.Require,
  importModule: (url: string) => Promise<unknown>,
  { mapOperations }: OperationsKit,
  { Refusal }: RefusalKit
): void {
  const { parentPort, workerData } = load("node:worker_threads") as typeof import("node:worker_threads")
  const { createHash } = load("node:crypto") as typeof import("node:crypto")
  const { yamlPath, parserUrl, maxDepth } = workerData as {
    readonly yamlPath: string
    readonly parserUrl: string
    readonly maxDepth: number
  }
  // The parser writes to the console when its error formatting trips; the gateway's logs are
  // structured lines, and what a document makes a library print is not one.
  for (const method of ["log", "info", "warn", "error", "debug"] as const) console[method] = () => {}

  /** The job at hand: one at a time (parse.ts sends the next when this one answered). */
  interface Job {
    readonly text: string
    readonly serverUrl?: string | undefined
    readonly documentUrl?: string | undefined
  }
  let text = ""
  type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
  const post = (message: unknown) => parentPort?.postMessage(message)
  const fail = (pointer: string, message: string) => post({ ok: false, pointer, message })
  const escapeSegment = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1")
  const unescapeSegment = (segment: string) => segment.replaceAll("~1", "/").replaceAll("~0", "~")
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value)
  const shown = (value: string) => JSON.stringify(value.length > 120 ? `${value.slice(0, 120)}...` : value)

  /** Where an offset of the text is, as people count: "line 3, column 7". */
  const placeOf = (offset: number | undefined) => {
    if (offset === undefined) return undefined
    const before = text.slice(0, offset)
    return `line ${before.split("\n").length}, column ${offset - before.lastIndexOf("\n")}`
  }

  /** JSON when it looks like JSON, YAML otherwise; messages name a place, never echo the content. */
  const parse = (): { readonly document: Json } | undefined => {
    const YAML = load(yamlPath) as typeof import("yaml")
    const start = text.trimStart()[0]
    if (start === "{" || start === "[") {
      try {
        return { document: JSON.parse(text) as Json }
      } catch {
        // JSON.parse's message quotes the text and gives no line: YAML (a superset of JSON) places it.
        const place = placeOf(YAML.parseDocument(text, { prettyErrors: false }).errors[0]?.pos[0])
        fail("", `the document is not valid JSON${place === undefined ? "" : ` (${place})`}`)
        return undefined
      }
    }
    const parsed = YAML.parseDocument(text, { prettyErrors: false, uniqueKeys: true, merge: false })
    const error = parsed.errors[0]
    if (error !== undefined) {
      fail("", `the document is not valid YAML (${placeOf(error.pos[0])}: ${error.code})`)
      return undefined
    }
    try {
      return { document: parsed.toJS({ maxAliasCount: 100 }) as Json }
    } catch {
      fail("", "the document's YAML aliases expand too far (more than 100)")
      return undefined
    }
  }

  /**
   * Every `$ref` must be a JSON Pointer into this document: following another URL would let whoever
   * writes the document make the gateway fetch it. Checked before the parser sees the document, so
   * no resolver of the parser's is ever asked to. Also bounds the nesting the parser recurses into.
   * Gives what `checkChains` needs once the document is valid: each reference's target, and the first
   * `$ref` that is not a string.
   */
  const checkReferences = (document: Json): References | undefined => {
    const internal: Array<{ readonly at: string; readonly target: string }> = []
    const targets = new Map<string, Json>()
    let notString: { readonly at: string; readonly value: Json } | undefined
    const stack: Array<{ readonly value: Json; readonly at: string; readonly depth: number }> = [
      { value: document, at: "", depth: 0 }
    ]
    for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
      const { value, at, depth } = item
      if (typeof value !== "object" || value === null) continue
      if (depth > maxDepth) {
        fail(at, `nested deeper than ${maxDepth} levels`)
        return undefined
      }
      if (Array.isArray(value)) {
        value.forEach((child, index) => {
          stack.push({ value: child, at: `${at}/${index}`, depth: depth + 1 })
        })
        continue
      }
      const record = value as { readonly [key: string]: Json }
      const ref = record.$ref
      if (typeof ref === "string") {
        if (!ref.startsWith("#")) {
          fail(
            `${at}/$ref`,
            `the reference ${shown(ref)} leaves the document: only references inside it ("#/...") are followed`
          )
          return undefined
        }
        if (ref !== "#" && !ref.startsWith("#/")) {
          fail(`${at}/$ref`, `the reference ${shown(ref)} is not a JSON Pointer ("#/...")`)
          return undefined
        }
        internal.push({ at: `${at}/$ref`, target: ref })
      } else if (ref !== undefined) notString ??= { at: `${at}/$ref`, value: ref }
      for (const [key, child] of Object.entries(record)) {
        stack.push({ value: child, at: `${at}/${escapeSegment(key)}`, depth: depth + 1 })
      }
    }
    for (const { at, target } of internal) {
      let here: Json | undefined = document
      let segments: Array<string>
      try {
        segments = target === "#" ? [] : target.slice(2).split("/").map(decodeURIComponent).map(unescapeSegment)
      } catch {
        fail(at, `the reference ${shown(target)} is not a well-formed JSON Pointer`)
        return undefined
      }
      for (const segment of segments) {
        here =
          Array.isArray(here) && /^(0|[1-9][0-9]*)$/.test(segment)
            ? (here as ReadonlyArray<Json>)[Number(segment)]
            : isObject(here) && Object.hasOwn(here, segment)
              ? (here as { readonly [key: string]: Json })[segment]
              : undefined
        if (here === undefined) break
      }
      if (here === undefined) {
        fail(at, `the reference ${shown(target)} points at nothing in the document`)
        return undefined
      }
      targets.set(target, here)
    }
    return { internal, targets, notString }
  }

  interface References {
    /** Every `$ref` string (all `#…`, each pointing at something), where it is. */
    readonly internal: ReadonlyArray<{ readonly at: string; readonly target: string }>
    /** What each of those references names. */
    readonly targets: ReadonlyMap<string, Json>
    readonly notString: { readonly at: string; readonly value: Json } | undefined
  }

  /**
   * What the parser's reference resolution refused, checked without it (docs/decisions.md, "OpenAPI
   * imports"): a `$ref` that is not a string, and references that lead back to themselves (`A` is a
   * `$ref` to `B`, which is a `$ref` to `A`: they name nothing). Run after the schema validation, as
   * the parser ran its resolution after it.
   */
  const checkChains = (references: References): boolean => {
    const { internal, targets, notString } = references
    if (notString !== undefined) {
      const what = Array.isArray(notString.value)
        ? "an array"
        : notString.value === null
          ? "null"
          : typeof notString.value
      fail(notString.at, `a "$ref" must be a reference ("#/..."), not ${what}`)
      return false
    }
    /** References known to lead to something that is not a reference. */
    const ends = new Set<string>()
    for (const { at, target } of internal) {
      const chain = new Set<string>()
      let ref: string | undefined = target
      while (ref !== undefined && !ends.has(ref)) {
        if (chain.has(ref)) {
          fail(
            at,
            ref === target
              ? `the reference ${shown(target)} leads back to itself: it names nothing`
              : `the reference ${shown(target)} leads into a loop of references (through ${shown(ref)}): it names nothing`
          )
          return false
        }
        chain.add(ref)
        const here = targets.get(ref)
        const next = isObject(here) ? (here as { readonly [key: string]: Json }).$ref : undefined
        ref = typeof next === "string" ? next : undefined
      }
      for (const each of chain) ends.add(each)
    }
    return true
  }

  /** The most specific of the parser's findings: the deepest pointer, the first among equals. */
  const firstFinding = (
    errors: ReadonlyArray<{ readonly message?: unknown; readonly path?: unknown }>
  ): { readonly pointer: string; readonly message: string } => {
    let best: { readonly pointer: string; readonly message: string; readonly depth: number } | undefined
    for (const error of errors) {
      const pointer =
        typeof error.path === "string" && (error.path === "" || error.path.startsWith("/")) ? error.path : ""
      const depth = pointer === "" ? 0 : pointer.split("/").length
      if (best === undefined || depth > best.depth) {
        best = { pointer, message: typeof error.message === "string" ? error.message : "invalid", depth }
      }
    }
    const more = errors.length > 1 ? ` (and ${errors.length - 1} other finding${errors.length > 2 ? "s" : ""})` : ""
    return best === undefined
      ? { pointer: "", message: "the document is not a valid OpenAPI document" }
      : { pointer: best.pointer, message: `${best.message}${more}` }
  }

  type AjvErrors = ReadonlyArray<unknown> | null | undefined
  interface OneValidator {
    readonly getAjvValidator: (version: "3.0" | "3.1") => ((document: unknown) => boolean) & { errors?: AjvErrors }
  }
  type TransformErrors = (
    document: unknown,
    errors: AjvErrors
  ) => ReadonlyArray<{ readonly message?: unknown; readonly path?: unknown }>
  /**
   * The parser's validator, for every import this worker runs: the parser's own `validate()` makes a new
   * one per call, which compiles the OpenAPI meta-schema again each time (hundreds of ms); this one keeps
   * its compiled schema per OpenAPI version. Only its schema validation is used: the parser's reference
   * resolution copies the whole document twice and expands every reference, most of an import's time
   * for what `checkReferences` and `checkChains` find on the document as it is. Imports run one at a
   * time, so its state is never shared.
   */
  let validating: Promise<{ readonly validator: OneValidator; readonly transformErrors: TransformErrors }> | undefined
  const loadValidator = () =>
    Promise.all([
      importModule(new URL("./lib/Validator/Validator.js", parserUrl).href) as Promise<{
        readonly Validator: new () => OneValidator
      }>,
      importModule(new URL("./utils/transform-errors.js", parserUrl).href) as Promise<{
        readonly transformErrors: TransformErrors
      }>
    ]).then(([{ Validator }, { transformErrors }]) => ({ validator: new Validator(), transformErrors }))
  const run = async (job: Job) => {
    const sha256 = createHash("sha256").update(text, "utf8").digest("hex")
    const parsed = parse()
    if (parsed === undefined) return
    const { document } = parsed
    if (!isObject(document)) return fail("", "the document is not an object")
    const version = document.openapi
    if (typeof version !== "string" || !/^3\.[01]\.\d+$/.test(version)) {
      return fail("/openapi", "expected an OpenAPI 3.0 or 3.1 document (`openapi: 3.0.x` or `3.1.x`)")
    }
    const references = checkReferences(document)
    if (references === undefined) return
    validating ??= loadValidator()
    const { validator, transformErrors } = await validating
    // What the parser's `validate()` does first: an `info` without a `version` is given "0.0.1".
    const info = document.info
    if (isObject(info) && !info.version) (info as Record<string, unknown>).version = "0.0.1"
    const validateSchema = validator.getAjvValidator(version.startsWith("3.1") ? "3.1" : "3.0")
    validateSchema(document)
    if (validateSchema.errors !== null && validateSchema.errors !== undefined && validateSchema.errors.length > 0) {
      const finding = firstFinding(transformErrors(document, validateSchema.errors))
      return fail(finding.pointer, finding.message)
    }
    if (!checkChains(references)) return
    let mapped: ReturnType<typeof mapOperations>
    try {
      mapped = mapOperations({
        document: document as Record<string, unknown>,
        version: version.startsWith("3.1") ? "3.1" : "3.0",
        serverUrl: job.serverUrl,
        documentUrl: job.documentUrl
      })
    } catch (error) {
      if (error instanceof Refusal) return fail(error.pointer, error.message)
      throw error
    }
    sendInParts("tools", mapped.tools)
    sendInParts("skipped", mapped.skipped)
    const texts = isObject(info) ? (info as Record<string, unknown>) : {}
    post({
      ok: true,
      sha256,
      title: typeof texts.title === "string" ? texts.title : "",
      version: typeof texts.version === "string" ? texts.version : ""
    })
  }

  /**
   * A list goes back as JSON texts of about `PART_CHARS` each: copying a string to the main thread is
   * one copy of its bytes, and the main thread parses one part per turn of its event loop (parse.ts),
   * where structured objects would be decoded all at once on arrival.
   */
  const PART_CHARS = 64 * 1024
  const sendInParts = (kind: "tools" | "skipped", items: ReadonlyArray<unknown>) => {
    let part: Array<string> = []
    let size = 0
    const flush = () => {
      if (part.length > 0) post({ part: kind, json: `[${part.join(",")}]` })
      part = []
      size = 0
    }
    for (const item of items) {
      const json = JSON.stringify(item)
      part.push(json)
      size += json.length
      if (size >= PART_CHARS) flush()
    }
    flush()
  }

  parentPort?.on("message", (job: Job) => {
    text = job.text
    run(job)
      .catch(() => fail("", "the document could not be parsed"))
      .finally(() => {
        text = ""
      })
  })
}
