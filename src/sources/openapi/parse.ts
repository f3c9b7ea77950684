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

/** How long an idle worker is kept for the next import before it is ended (and its memory freed). */
const IDLE_MS = 30_000

/**
 * The parser's worker: started at the first import, reused by the next ones while it lives (the parser
 * stays loaded and compiled code warm), ended after `IDLE_MS` without work, after a job that failed
 * from outside (error, timeout, interruption). Idle, it does not keep the process alive (`unref`).
 */
let current: { readonly worker: Worker; idle: NodeJS.Timeout | undefined } | undefined

const startWorker = () => {
  const workerData = {
    yamlPath: resolveFrom.resolve("yaml"),
    parserUrl: pathToFileURL(resolveFrom.resolve("@scalar/openapi-parser")).href,
    maxDepth: MAX_DEPTH
  }
  const worker = new Worker(workerSource, { eval: true, workerData, resourceLimits: WORKER_LIMITS })
  worker.unref()
  // An error between jobs (none is expected) must not become an uncaught one; the exit below follows.
  worker.on("error", () => undefined)
  const started = { worker, idle: undefined }
  worker.once("exit", () => {
    if (current === started) current = undefined
  })
  return started
}

const endWorker = (ended: NonNullable<typeof current>) => {
  if (current === ended) current = undefined
  if (ended.idle !== undefined) clearTimeout(ended.idle)
  void ended.worker.terminate()
}

/** One job at a time on the worker: its answers are the parts of one document, then its outcome. */
const oneAtATime = Effect.unsafeMakeSemaphore(1)

/**
 * Parses and validates an OpenAPI document's text on the parser's worker thread (parse-worker.ts),
 * then rebuilds the document here from the parts the worker sends, one message at a time.
 */
export const parseDocument = (text: string): Effect.Effect<ParsedDocument, OpenApiInvalid> =>
  oneAtATime.withPermits(1)(
    Effect.async<ParsedDocument, OpenApiInvalid>((resume) => {
      const job = current ?? startWorker()
      current = job
      if (job.idle !== undefined) clearTimeout(job.idle)
      job.idle = undefined
      const { worker } = job
      // Held while it works (an import must not be cut off by the process having nothing else to do).
      worker.ref()
      const document: Record<string, unknown> = {}
      const finish = (outcome: Effect.Effect<ParsedDocument, OpenApiInvalid>, keep: boolean) => {
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
        if (keep && current === job) {
          worker.unref()
          job.idle = setTimeout(() => endWorker(job), IDLE_MS)
          job.idle.unref()
        } else endWorker(job)
        resume(outcome)
      }
      const onMessage = (message: Answer) => {
        if ("part" in message) {
          rebuild(document, message)
          // The next part once the event loop has turned (parse-worker.ts, `sendInParts`).
          setImmediate(() => worker.postMessage(null))
        } else if (message.ok) finish(Effect.succeed({ document, sha256: message.sha256 }), true)
        else finish(Effect.fail(new OpenApiInvalid({ pointer: message.pointer, message: message.message })), true)
      }
      const onError = (error: NodeJS.ErrnoException) =>
        finish(
          Effect.fail(
            new OpenApiInvalid({
              pointer: "",
              message:
                error.code === "ERR_WORKER_OUT_OF_MEMORY"
                  ? "the document takes more memory to parse than an import may use"
                  : "the document could not be parsed"
            })
          ),
          false
        )
      const onExit = () =>
        finish(Effect.fail(new OpenApiInvalid({ pointer: "", message: "the document could not be parsed" })), false)
      worker.on("message", onMessage)
      worker.once("error", onError)
      worker.once("exit", onExit)
      worker.postMessage(text)
      // Interrupted (the timeout below, or the caller): the worker may be mid-document; it is ended.
      return Effect.sync(() => {
        worker.off("message", onMessage)
        worker.off("error", onError)
        worker.off("exit", onExit)
        endWorker(job)
      })
    }).pipe(
      Effect.timeoutFail({
        duration: PARSE_TIMEOUT,
        onTimeout: () => new OpenApiInvalid({ pointer: "", message: "parsing the document took too long" })
      })
    )
  )
