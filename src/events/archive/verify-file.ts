import { createReadStream } from "node:fs"
import { availableParallelism } from "node:os"
import { Worker } from "node:worker_threads"
import { ChainCheck, type Checkpoint } from "./chain.js"
import { MAX_LINE_BYTES } from "./format.js"
import { recordWorker } from "./record-worker.js"

/**
 * `gateway verify-audit` (docs/audit-archive.md, "Verifying"): reads the file as a stream of lines,
 * checks each line's envelope, hash and signature on worker threads, and the chain in file order here.
 * Memory stays flat whatever the file's size: at most `QUEUED_PER_WORKER` batches per worker are in
 * flight, and a line longer than `MAX_LINE_BYTES` is refused before it is read whole.
 */

/**
 * A public key the verifier is given (docs/audit-archive.md, "Verifying"): Base64 of its 32 bytes, and
 * optionally the sequences it may sign, from `first` to `last` (inclusive; absent: unbounded).
 */
export interface VerifyingKey {
  readonly publicKey: string
  readonly first?: number
  readonly last?: number
}

export type Verified =
  | { readonly ok: true; readonly entries: number; readonly checkpoint: Checkpoint }
  | { readonly ok: false; readonly line: number; readonly reason: string }

const BATCH_LINES = 256
// Lines may be up to MAX_LINE_BYTES each: a batch also closes at this many bytes, so what is in flight
// stays a few megabytes however long the lines are.
const BATCH_BYTES = 256 * 1024
// A worker holds a few batches of short strings at a time: a small young generation is plenty, and each
// megabyte saved counts once per core against the verifier's memory bound.
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 16 }
const QUEUED_PER_WORKER = 2

interface Batch {
  readonly id: number
  readonly firstLine: number
  readonly lines: Array<string>
}

interface Checked {
  readonly id: number
  readonly sequences: ReadonlyArray<number>
  readonly previous: ReadonlyArray<string>
  readonly hashes: ReadonlyArray<string>
  readonly failure: { readonly index: number; readonly reason: string } | undefined
}

// tsx and vitest compile with esbuild's keepNames, which wraps functions in a `__name(fn, "name")` helper
// defined outside this function's text: the worker gets a do-nothing one.
const workerSource = `var __name = (target) => target;\n(${recordWorker.toString()})(require)`

class Refused {
  constructor(
    readonly line: number,
    readonly reason: string
  ) {}
}

/** The worker threads, fed batches in order; their answers are handed to `onChecked` in batch order. */
class Pool {
  private readonly workers: Array<Worker>
  private readonly waiting = new Map<number, Checked>()
  private readonly firstLines = new Map<number, number>()
  private nextToHand = 0
  private sent = 0
  private turn = 0
  private room: (() => void) | undefined
  failed: unknown = undefined

  constructor(
    size: number,
    keys: ReadonlyMap<string, string | VerifyingKey>,
    private readonly onChecked: (checked: Checked, firstLine: number) => void
  ) {
    const workerData = {
      keys: [...keys].map(([id, given]) => {
        const key = typeof given === "string" ? { publicKey: given } : given
        return [id, key.publicKey, key.first ?? 1, key.last ?? Number.MAX_SAFE_INTEGER] as const
      })
    }
    this.workers = Array.from({ length: size }, () => {
      const worker = new Worker(workerSource, { eval: true, workerData, resourceLimits: WORKER_LIMITS })
      worker.on("message", (checked: Checked) => this.arrived(checked))
      worker.on("error", (error) => this.fail(error))
      return worker
    })
  }

  private arrived(checked: Checked) {
    this.waiting.set(checked.id, checked)
    for (let next = this.waiting.get(this.nextToHand); next !== undefined; next = this.waiting.get(this.nextToHand)) {
      this.waiting.delete(this.nextToHand)
      const firstLine = this.firstLines.get(this.nextToHand) as number
      this.firstLines.delete(this.nextToHand)
      this.nextToHand += 1
      try {
        this.onChecked(next, firstLine)
      } catch (error) {
        this.fail(error)
      }
    }
    this.wake()
  }

  private fail(error: unknown) {
    this.failed ??= error
    this.wake()
  }

  private wake() {
    const room = this.room
    this.room = undefined
    room?.()
  }

  private inFlight = () => this.sent - this.nextToHand

  async send(batch: Batch): Promise<void> {
    while (this.failed === undefined && this.inFlight() >= this.workers.length * QUEUED_PER_WORKER) {
      await new Promise<void>((resolve) => {
        this.room = resolve
      })
    }
    if (this.failed !== undefined) return
    this.firstLines.set(batch.id, batch.firstLine)
    this.sent += 1
    const worker = this.workers[this.turn] as Worker
    this.turn = (this.turn + 1) % this.workers.length
    worker.postMessage({ id: batch.id, lines: batch.lines })
  }

  async drain(): Promise<void> {
    while (this.failed === undefined && this.inFlight() > 0) {
      await new Promise<void>((resolve) => {
        this.room = resolve
      })
    }
  }

  close = () => Promise.all(this.workers.map((worker) => worker.terminate()))
}

/**
 * The file's lines (Latin-1: one character per byte, so a byte above 0x7E is seen and refused), in
 * batches. A refusal of the reader's own (a line too long, a cut last line) comes after every line before
 * it was handed out, so an earlier line's fault is still the one reported.
 */
async function* batchesOf(path: string): AsyncGenerator<Batch> {
  let id = 0
  let lineNumber = 0
  let lines: Array<string> = []
  let batchBytes = 0
  let firstLine = 1
  let partial: Array<Buffer> = []
  let partialBytes = 0
  let refused: Refused | undefined
  const tooLong = () => new Refused(lineNumber + 1, `longer than ${MAX_LINE_BYTES} bytes`)
  const push = (line: string) => {
    lineNumber += 1
    if (lines.length === 0) firstLine = lineNumber
    lines.push(line)
    batchBytes += line.length
  }
  read: for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let start = 0
    for (let end = chunk.indexOf(10, start); end >= 0; end = chunk.indexOf(10, start)) {
      if (partialBytes + end - start > MAX_LINE_BYTES) {
        refused = tooLong()
        break read
      }
      if (partialBytes === 0) push(chunk.toString("latin1", start, end))
      else {
        partial.push(chunk.subarray(start, end))
        push(Buffer.concat(partial).toString("latin1"))
        partial = []
        partialBytes = 0
      }
      start = end + 1
      if (lines.length === BATCH_LINES || batchBytes >= BATCH_BYTES) {
        yield { id: id++, firstLine, lines }
        lines = []
        batchBytes = 0
      }
    }
    if (start < chunk.length) {
      partialBytes += chunk.length - start
      if (partialBytes > MAX_LINE_BYTES) {
        refused = tooLong()
        break
      }
      partial.push(chunk.subarray(start))
    }
  }
  if (lines.length > 0) yield { id: id++, firstLine, lines }
  if (refused !== undefined) throw refused
  if (partialBytes > 0) {
    throw new Refused(lineNumber + 1, "the last line has no line end: the file was cut in the middle of a record")
  }
}

/**
 * Verifies the archive file at `path` against the public keys (key id → Base64 of 32 bytes, or that
 * with the range of sequences the key may sign), from the start of the chain or from the checkpoint
 * `after`. The first line that fails is the answer.
 */
export const verifyArchiveFile = async (
  path: string,
  keys: ReadonlyMap<string, string | VerifyingKey>,
  after: Checkpoint | undefined,
  threads: number = availableParallelism()
): Promise<Verified> => {
  const chain = new ChainCheck(after)
  let entries = 0
  const pool = new Pool(Math.max(1, threads), keys, (checked, firstLine) => {
    for (let index = 0; index < checked.sequences.length; index++) {
      const line = firstLine + index
      const problem = chain.next(
        line,
        checked.sequences[index] as number,
        checked.previous[index] as string,
        checked.hashes[index] as string
      )
      if (problem !== undefined) throw new Refused(line, problem)
      entries += 1
    }
    if (checked.failure !== undefined) throw new Refused(firstLine + checked.failure.index, checked.failure.reason)
  })
  try {
    for await (const batch of batchesOf(path)) {
      await pool.send(batch)
      if (pool.failed !== undefined) break
    }
    await pool.drain()
    if (pool.failed !== undefined) throw pool.failed
    const end = chain.end()
    return typeof end === "string" ? { ok: false, line: 0, reason: end } : { ok: true, entries, checkpoint: end }
  } catch (error) {
    // A refusal found by the workers' earlier batches wins over one the reader found further on.
    await pool.drain().catch(() => undefined)
    const first = pool.failed instanceof Refused ? pool.failed : error
    if (first instanceof Refused) return { ok: false, line: first.line, reason: first.reason }
    throw first
  } finally {
    await pool.close()
  }
}
