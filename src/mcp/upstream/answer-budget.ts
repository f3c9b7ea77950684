import { Context, Layer } from "effect"

/**
 * The gateway-wide budget of memory held for backend answers (docs/operations.md, "Memory held for
 * backend answers"): the bytes of answers being read — a JSON body read whole, the event an SSE
 * stream is in the middle of — summed over every call to every backend. Each answer is already
 * bounded on its own (`maxBackendAnswer`); this bounds how many of them may be held at once. One
 * process-wide count, so every generation's calls share it; each call is checked against its own
 * generation's `server.max_answer_bytes_in_flight` (reloadable).
 *
 * A reader holds one `AnswerHold` per answer and tells it how much it holds now (`to`); a reader
 * that would pass the limit is refused (and holds what it held before), and releases everything
 * when the answer is done, refused or abandoned.
 */
export class AnswerBudget {
  private heldBytes = 0
  private refusedAt = Number.NEGATIVE_INFINITY
  private refusalsSince = 0

  /** Bytes held now, across every answer being read. */
  get held(): number {
    return this.heldBytes
  }

  /** A hold for one answer, checked against `limit` bytes in all. */
  hold(limit: number): AnswerHold {
    return new Hold(this, limit)
  }

  /**
   * For `Hold` only (an answer's count goes through its hold): adds `more` bytes (negative: gives them
   * back); false, adding nothing, when that would pass `limit`.
   */
  adjust(more: number, limit: number): boolean {
    if (more > 0 && this.heldBytes + more > limit) return false
    this.heldBytes += more
    return true
  }

  /**
   * Counts a refusal; whether to log it (at most once per `windowMs`): undefined when not, else how
   * many refusals went unlogged since the last line. Like `backend.call_failed`: a flood of refused
   * calls writes a line every 30 s, not one per call.
   */
  noteRefusal(now: number, windowMs = refusalLogWindowMs): number | undefined {
    if (now - this.refusedAt < windowMs) {
      this.refusalsSince += 1
      return undefined
    }
    const suppressed = this.refusalsSince
    this.refusedAt = now
    this.refusalsSince = 0
    return suppressed
  }
}

export interface AnswerHold {
  /** What this answer holds now. */
  readonly bytes: number
  /** Holds `bytes` in all for this answer; false — holding what it held — when that would pass the limit. */
  to(bytes: number): boolean
  /** Gives back everything this answer holds; idempotent. */
  readonly release: () => void
}

/**
 * One answer's hold. A class, not an object literal with a getter: a forwarded call makes one, and
 * V8 turns a literal with an accessor into a dictionary-mode object every time (docs/benchmarks.md,
 * 2026-11-27). `release` is bound, since it is passed on as a callback (`handOff`); `to` is only ever
 * called on the hold, so it is a method of the class rather than a closure per hold.
 */
class Hold implements AnswerHold {
  private mine = 0

  constructor(
    private readonly budget: AnswerBudget,
    private readonly limit: number
  ) {}

  get bytes(): number {
    return this.mine
  }

  to(bytes: number): boolean {
    if (!this.budget.adjust(bytes - this.mine, this.limit)) return false
    this.mine = bytes
    return true
  }

  // Nothing held, nothing to give back (and no −0 or Infinity through `adjust`, which would make V8
  // drop its optimized code for both on a gateway's first calls of a new load).
  readonly release = (): void => {
    if (this.mine === 0) return
    this.budget.adjust(-this.mine, this.limit)
    this.mine = 0
  }
}

/**
 * How long an answer read in full may stay counted while it is written to its caller. The writer
 * releases it when the caller's answer is out; past this it is released anyway, so a writer that never
 * says so (or a caller that reads very slowly) cannot shrink the budget for good.
 */
export const handedOffAnswerMs = 30_000

/**
 * Answers smaller than this are given back when read, not handed off: their copies are small, and a
 * timer per call would cost the common case more CPU than it saves memory.
 */
export const handOffFromBytes = 64 * 1024

/** `hold`, kept past the read until the returned function runs (once), or `handedOffAnswerMs` pass. */
export const handOff = (hold: AnswerHold): (() => void) => {
  const timer = setTimeout(hold.release, handedOffAnswerMs)
  timer.unref()
  return () => {
    clearTimeout(timer)
    hold.release()
  }
}

/** `backend.answer_budget_exceeded` is written at most once per this window. */
export const refusalLogWindowMs = 30_000

/** The process's one AnswerBudget (src/runtime/base.ts), shared by every generation's backends. */
export class AnswerBudgetTag extends Context.Tag("gateway/AnswerBudget")<AnswerBudgetTag, AnswerBudget>() {
  static readonly Live = Layer.sync(AnswerBudgetTag, () => new AnswerBudget())
}
