import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { Duration, Effect } from "effect"
import { OpenApiInvalid } from "./errors.js"
import { parseWorker } from "./parse-worker.js"

/** A document the worker parsed and the parser validated, with the SHA-256 of its bytes. */
export interface ParsedDocument {
  readonly document: Record<string, unknown>
  readonly sha256: string
}

/** How deep a document may nest; deeper ones are refused before the parser recurses into them. */
export const MAX_DEPTH = 256
/** Parsing and validating a 32 MiB document takes seconds; one that takes longer is refused. */
const PARSE_TIMEOUT = Duration.seconds(60)
// A document of 32 MiB takes a few hundred MB as objects while the parser copies and validates it.
// The limit keeps a hostile one from taking the gateway's memory: the worker dies, the gateway stays.
const WORKER_LIMITS = { maxOldGenerationSizeMb: 1536, maxYoungGenerationSizeMb: 64 }

const resolveFrom = createRequire(import.meta.url)

// tsx and vitest compile with esbuild's keepNames (a `__name` helper defined outside the function's
// text): the worker gets a do-nothing one. `import()` is written here, in a string, because a test
// runner rewrites the `import()`s of the modules it loads.
const workerSource = `var __name = (target) => target;\n(${parseWorker.toString()})(require, (url) => import(url))`

type Answer =
  | { readonly ok: true; readonly sha256: string }
  | { readonly ok: false; readonly pointer: string; readonly message: string }
  | { readonly part: "value"; readonly path: ReadonlyArray<string>; readonly value: unknown }
  | { readonly part: "object"; readonly path: ReadonlyArray<string> }
  | {
      readonly part: "entries"
      readonly path: ReadonlyArray<string>
      readonly entries: ReadonlyArray<[string, unknown]>
    }

/** Sets an own property, whatever its name (`__proto__` included, as JSON.parse does). */
const define = (target: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })

/** The object at `path` of the document being rebuilt from the worker's parts. */
const at = (document: Record<string, unknown>, path: ReadonlyArray<string>) => {
  let here = document
  for (const key of path) here = here[key] as Record<string, unknown>
  return here
}

/** Rebuilds the document from one of the worker's parts (parse-worker.ts, `sendInParts`). */
const rebuild = (document: Record<string, unknown>, message: Exclude<Answer, { readonly ok: boolean }>) => {
  const parent = at(document, message.path.slice(0, -1))
  const key = message.path[message.path.length - 1] ?? ""
  if (message.part === "value") define(parent, key, message.value)
  else if (message.part === "object") define(parent, key, {})
  else for (const [name, value] of message.entries) define(at(document, message.path), name, value)
}

/**
 * Parses and validates an OpenAPI document's text on a worker thread of its own (parse-worker.ts),
 * one per import: imports are rare, and a fresh worker gives its memory back when it ends.
 */
export const parseDocument = (text: string): Effect.Effect<ParsedDocument, OpenApiInvalid> =>
  Effect.async<ParsedDocument, OpenApiInvalid>((resume) => {
    const workerData = {
      text,
      yamlPath: resolveFrom.resolve("yaml"),
      parserUrl: pathToFileURL(resolveFrom.resolve("@scalar/openapi-parser")).href,
      maxDepth: MAX_DEPTH
    }
    const worker = new Worker(workerSource, { eval: true, workerData, resourceLimits: WORKER_LIMITS })
    let answered = false
    const answer = (outcome: Effect.Effect<ParsedDocument, OpenApiInvalid>) => {
      if (answered) return
      answered = true
      resume(outcome)
      void worker.terminate()
    }
    const document: Record<string, unknown> = {}
    worker.on("message", (message: Answer) => {
      if ("part" in message) rebuild(document, message)
      else if (message.ok) answer(Effect.succeed({ document, sha256: message.sha256 }))
      else answer(Effect.fail(new OpenApiInvalid({ pointer: message.pointer, message: message.message })))
    })
    worker.once("error", (error: NodeJS.ErrnoException) =>
      answer(
        Effect.fail(
          new OpenApiInvalid({
            pointer: "",
            message:
              error.code === "ERR_WORKER_OUT_OF_MEMORY"
                ? "the document takes more memory to parse than an import may use"
                : "the document could not be parsed"
          })
        )
      )
    )
    worker.once("exit", () =>
      answer(Effect.fail(new OpenApiInvalid({ pointer: "", message: "the document could not be parsed" })))
    )
    return Effect.sync(() => {
      answered = true
      void worker.terminate()
    })
  }).pipe(
    Effect.timeoutFail({
      duration: PARSE_TIMEOUT,
      onTimeout: () => new OpenApiInvalid({ pointer: "", message: "parsing the document took too long" })
    })
  )
