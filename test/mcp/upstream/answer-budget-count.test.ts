/**
 * The count behind `server.max_answer_bytes_in_flight` (src/mcp/upstream/answer-budget.ts): holds add
 * up across answers, each checked against its own limit (a reload's new limit applies to new calls); a
 * refused growth takes nothing; shrinking and releasing always succeed and release is idempotent; an
 * answer handed to its writer is given back when the writer says so, or after the backstop; refusals
 * are logged at most once per window, the next line counting the ones in between.
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import { AnswerBudget, handedOffAnswerMs, handOff } from "../../../src/mcp/upstream/answer-budget.js"

afterEach(() => {
  vi.useRealTimers()
})

describe("AnswerBudget", () => {
  it("holds add up across answers; growth past the limit is refused and takes nothing; shrinking always succeeds", () => {
    const budget = new AnswerBudget()
    const first = budget.hold(100)
    const second = budget.hold(100)
    expect(first.to(60)).toBe(true)
    expect(first.bytes).toBe(60)
    expect(second.to(50)).toBe(false)
    expect(second.bytes).toBe(0)
    expect(budget.held).toBe(60)
    expect(second.to(40)).toBe(true)
    expect(budget.held).toBe(100)
    expect(first.to(10)).toBe(true)
    expect(budget.held).toBe(50)
    first.release()
    first.release()
    expect(budget.held).toBe(40)
    second.release()
    expect(budget.held).toBe(0)
  })

  it("each hold is checked against its own limit: a reloaded, smaller limit refuses new answers while older ones finish", () => {
    const budget = new AnswerBudget()
    const old = budget.hold(200)
    expect(old.to(150)).toBe(true)
    const reloaded = budget.hold(100)
    expect(reloaded.to(1)).toBe(false)
    expect(old.to(190)).toBe(true)
    old.release()
    expect(reloaded.to(100)).toBe(true)
  })

  it("an answer handed off is given back when its writer says so, or after the backstop", () => {
    vi.useFakeTimers()
    const budget = new AnswerBudget()
    const written = budget.hold(100)
    written.to(30)
    const release = handOff(written)
    const forgotten = budget.hold(100)
    forgotten.to(20)
    handOff(forgotten)
    expect(budget.held).toBe(50)
    release()
    expect(budget.held).toBe(20)
    vi.advanceTimersByTime(handedOffAnswerMs)
    expect(budget.held).toBe(0)
    release()
    expect(budget.held).toBe(0)
  })

  it("refusals are logged at most once per window; the next line counts those in between", () => {
    const budget = new AnswerBudget()
    expect(budget.noteRefusal(1_000)).toBe(0)
    expect(budget.noteRefusal(2_000)).toBeUndefined()
    expect(budget.noteRefusal(30_999)).toBeUndefined()
    expect(budget.noteRefusal(31_000)).toBe(2)
    expect(budget.noteRefusal(31_001)).toBeUndefined()
  })
})
