import { GENESIS_HASH } from "./format.js"

/** A point of the chain kept outside the archive: the last verified sequence and its hash. */
export interface Checkpoint {
  readonly sequence: number
  readonly hash: string
}

/**
 * The in-order half of verification (docs/audit-archive.md, "Verifying"): every entry's sequence is the
 * one before plus one and its `previous_hash` is the one before's hash. The first entry is sequence 1
 * (after the all-zero genesis hash) or, given a checkpoint, the one right after it; a file that starts at
 * sequence 1 must pass through the checkpoint with the same hash, and may not end before it; an empty file
 * is refused when a checkpoint past sequence 0 is given.
 */
export class ChainCheck {
  private last: Checkpoint | undefined
  private lastLine = 0
  private startedAtOne = false

  constructor(private readonly after: Checkpoint | undefined) {}

  /** Why this entry breaks the chain, or undefined. */
  next(line: number, sequence: number, previousHash: string, hash: string): string | undefined {
    const problem = this.last === undefined ? this.first(sequence, previousHash) : this.link(sequence, previousHash)
    if (problem !== undefined) return problem
    if (this.after !== undefined && sequence === this.after.sequence && hash !== this.after.hash) {
      return `sequence ${sequence} has hash ${hash}, the checkpoint says ${this.after.hash}`
    }
    this.last = { sequence, hash }
    this.lastLine = line
    return undefined
  }

  /** Why the file may not end here, or the checkpoint to keep for the next run. */
  end(): Checkpoint | string {
    const after = this.after
    if (this.last === undefined) {
      if (after === undefined || after.sequence === 0) return after ?? { sequence: 0, hash: GENESIS_HASH }
      // An archive emptied (or replaced by an empty file) would otherwise pass with the checkpoint unchanged.
      return `the file holds no entry, but the checkpoint is at sequence ${after.sequence}: entries were removed`
    }
    if (after !== undefined && this.startedAtOne && this.last.sequence < after.sequence) {
      return `the file ends at sequence ${this.last.sequence}, before the checkpoint's sequence ${after.sequence}: entries were removed from its end (its last line is ${this.lastLine})`
    }
    return this.last
  }

  private first(sequence: number, previousHash: string): string | undefined {
    if (sequence === 1) {
      this.startedAtOne = true
      return previousHash === GENESIS_HASH ? undefined : "sequence 1 must have the all-zero previous_hash"
    }
    const after = this.after
    if (after === undefined) {
      return `the file starts at sequence ${sequence}, not 1: give the checkpoint it continues from (--after-sequence, --after-hash)`
    }
    if (sequence !== after.sequence + 1) {
      return `the file starts at sequence ${sequence}; expected 1 or ${after.sequence + 1} (right after the checkpoint)`
    }
    return previousHash === after.hash
      ? undefined
      : "previous_hash is not the checkpoint's hash: the file does not continue from that checkpoint"
  }

  private link(sequence: number, previousHash: string): string | undefined {
    const last = this.last as Checkpoint
    if (sequence !== last.sequence + 1) {
      const what = sequence <= last.sequence ? "an entry repeated or out of order" : "an entry missing or out of order"
      return `sequence ${sequence} where ${last.sequence + 1} was expected (${what})`
    }
    return previousHash === last.hash
      ? undefined
      : `previous_hash does not match the hash of line ${this.lastLine} (broken link)`
  }
}
