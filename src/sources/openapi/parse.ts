import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { Duration, Effect } from "effect"
import type { HttpToolSpec } from "../schema.js"
import { OpenApiInvalid, refusalKit } from "./errors.js"
import { operationsKit, type Skipped } from "./operations.js"
import { parseWorker } from "./parse-worker.js"
import { pointerKit } from "./pointer.js"
import { schemasKit } from "./schemas.js"
import { serverUrlKit } from "./server-url.js"
import { templateKit } from "./template.js"

/** A document the worker parsed, the parser validated and the worker mapped to tools. */
export interface MappedDocument {
  readonly tools: ReadonlyArray<HttpToolSpec>
  readonly skipped: ReadonlyArray<Skipped>
  /** The SHA-256 (hex) of the document's bytes. */
  readonly sha256: string
  /** The document's `info.title` and `info.version`, "" when not strings. */
  readonly title: string
  readonly version: string
}

export interface MapOptions {
  readonly serverUrl?: string | undefined
  readonly documentUrl?: string | undefined
}

/** How deep a document may nest; deeper ones are refused before the parser recurses into them. */
export const MAX_DEPTH = 256
/** Parsing and validating a 32 MiB document takes seconds; one that takes longer is refused. */
const PARSE_TIMEOUT = Duration.seconds(60)
// A document of 32 MiB takes a few hundred MB as objects while the parser copies and validates it.
// The limit keeps a hostile one from taking the gateway's memory: the worker dies, the gateway stays.
const WORKER_LIMITS = { maxOldGenerationSizeMb: 1536, maxYoungGenerationSizeMb: 64 }

const resolveFrom = createRequire(import.meta.url)

// The worker's program: the mapping's kits (each a function using only its parameters and globals),
// then the worker's own function, each as its source text. tsx and vitest compile with esbuild's
// keepNames (a `__name` helper defined outside the function's text): the worker gets a do-nothing one.
// `import()` is written here, in a string, because a test runner rewrites the `import()`s of the
// modules it loads.
const workerSource = [
  "var __name = (target) => target;",
  `const pointer = (${pointerKit.toString()})();`,
  `const refusal = (${refusalKit.toString()})();`,
  `const operations = (${operationsKit.toString()})(pointer, (${templateKit.toString()})(), ` +
    `(${schemasKit.toString()})(pointer), (${serverUrlKit.toString()})(pointer, refusal), refusal);`,
  `(${parseWorker.toString()})(require, (url) => import(url), operations, refusal)`
].join("\n")

type Answer =
  | { readonly ok: true; readonly sha256: string; readonly title: string; readonly version: string }
  | { readonly ok: false; readonly pointer: string; readonly message: string }
  | { readonly part: "tools" | "skipped"; readonly json: string }

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The worker's JSON parts as one list, one part per turn of the event loop: a part is about 64 KiB
 * (parse-worker.ts, `sendInParts`), about a millisecond of `JSON.parse` on a quiet machine, so requests waiting meanwhile
 * are answered between parts rather than after the whole list.
 */
const decodeParts = <A>(parts: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<A>> =>
  Effect.promise(async () => {
    const items: Array<A> = []
    for (const [index, json] of parts.entries()) {
      if (index > 0) await turn()
      for (const item of JSON.parse(json) as ReadonlyArray<A>) items.push(item)
    }
    return items
  })

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

/** One job at a time on the worker: its answers are the parts of one document's tools, then its outcome. */
const oneAtATime = Effect.unsafeMakeSemaphore(1)

interface Received {
  readonly tools: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<string>
  readonly sha256: string
  readonly title: string
  readonly version: string
}

/**
 * Parses and validates an OpenAPI document's text on the parser's worker thread (parse-worker.ts),
 * which maps its operations to tools and sends back only those, as JSON parts decoded here a part at a
 * time.
 */
export const parseAndMap = (text: string, options: MapOptions = {}): Effect.Effect<MappedDocument, OpenApiInvalid> =>
  Effect.flatMap(inWorker(text, options), (received) =>
    Effect.map(
      Effect.all([decodeParts<HttpToolSpec>(received.tools), decodeParts<Skipped>(received.skipped)]),
      ([tools, skipped]) => ({
        tools,
        skipped,
        sha256: received.sha256,
        title: received.title,
        version: received.version
      })
    )
  )

const inWorker = (text: string, options: MapOptions): Effect.Effect<Received, OpenApiInvalid> =>
  oneAtATime.withPermits(1)(
    Effect.async<Received, OpenApiInvalid>((resume) => {
      const job = current ?? startWorker()
      current = job
      if (job.idle !== undefined) clearTimeout(job.idle)
      job.idle = undefined
      const { worker } = job
      // Held while it works (an import must not be cut off by the process having nothing else to do).
      worker.ref()
      const tools: Array<string> = []
      const skipped: Array<string> = []
      const finish = (outcome: Effect.Effect<Received, OpenApiInvalid>, keep: boolean) => {
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
        if ("part" in message) (message.part === "tools" ? tools : skipped).push(message.json)
        else if (message.ok) {
          const { sha256, title, version } = message
          finish(Effect.succeed({ tools, skipped, sha256, title, version }), true)
        } else finish(Effect.fail(new OpenApiInvalid({ pointer: message.pointer, message: message.message })), true)
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
      worker.postMessage({ text, serverUrl: options.serverUrl, documentUrl: options.documentUrl })
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
