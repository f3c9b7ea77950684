import { describe, expect, it } from "vitest"
import { abortSignalOf, type Cancellation, Canceller } from "../../src/runtime/cancellation.js"

describe("Canceller: an AbortController's semantics for the hot path (src/runtime/cancellation.ts)", () => {
  it("runs each listener once, synchronously, in the order added, with the reason set before they run", () => {
    const canceller = new Canceller()
    const seen: Array<string> = []
    canceller.addEventListener("abort", () => seen.push(`first ${String(canceller.reason)}`))
    canceller.addEventListener("abort", () => seen.push(`second ${canceller.aborted}`), { once: true })
    expect(canceller.aborted).toBe(false)
    canceller.abort("why")
    expect(seen).toEqual(["first why", "second true"])
    canceller.abort("again")
    expect(seen).toHaveLength(2)
    expect(canceller.reason).toBe("why")
  })

  it("defaults the reason to an AbortError, as AbortController.abort() does", () => {
    const canceller = new Canceller()
    canceller.abort()
    const controller = new AbortController()
    controller.abort()
    expect(canceller.reason).toBeInstanceOf(DOMException)
    expect((canceller.reason as DOMException).name).toBe("AbortError")
    expect((canceller.reason as DOMException).name).toBe((controller.signal.reason as DOMException).name)
  })

  it("never runs a listener removed before, added after the abort, or added twice more than once", () => {
    const canceller = new Canceller()
    let removed = 0
    let twice = 0
    const remove = () => removed++
    const both = () => twice++
    canceller.addEventListener("abort", remove)
    canceller.addEventListener("abort", both)
    canceller.addEventListener("abort", both)
    canceller.removeEventListener("abort", remove)
    canceller.abort()
    let late = 0
    canceller.addEventListener("abort", () => late++)
    canceller.removeEventListener("abort", remove)
    expect([removed, twice, late]).toEqual([0, 1, 0])
  })

  it("skips a listener another removed during the abort, as AbortController does", () => {
    type Target = Pick<Canceller, "addEventListener" | "removeEventListener">
    const run = (target: Target, abort: () => void) => {
      const seen: Array<string> = []
      const second = () => seen.push("second")
      target.addEventListener("abort", () => {
        seen.push("first")
        target.removeEventListener("abort", second)
      })
      target.addEventListener("abort", second)
      target.addEventListener("abort", () => seen.push("third"))
      abort()
      return seen
    }
    const controller = new AbortController()
    const expected = run(controller.signal, () => controller.abort())
    expect(expected).toEqual(["first", "third"])
    const canceller = new Canceller()
    expect(run(canceller, () => canceller.abort())).toEqual(expected)
  })

  it("never runs a listener added by another during the abort (the DOM's rule; no caller adds one to an aborted signal)", () => {
    const canceller = new Canceller()
    const seen: Array<string> = []
    canceller.addEventListener("abort", () => {
      seen.push("first")
      canceller.addEventListener("abort", () => seen.push("late"))
    })
    canceller.abort()
    expect(seen).toEqual(["first"])
  })

  it("runs the other listeners when one throws, and reports the error as uncaught, as EventTarget does", async () => {
    const canceller = new Canceller()
    let after = false
    const reported = new Promise<unknown>((resolve) => {
      const listeners = process.listeners("uncaughtException")
      process.removeAllListeners("uncaughtException")
      process.once("uncaughtException", (error) => {
        for (const listener of listeners) process.on("uncaughtException", listener)
        resolve(error)
      })
    })
    canceller.addEventListener("abort", () => {
      throw new Error("listener failed")
    })
    canceller.addEventListener("abort", () => {
      after = true
    })
    canceller.abort()
    expect(after).toBe(true)
    expect(((await reported) as Error).message).toBe("listener failed")
  })

  it("abortSignalOf: a real AbortSignal that fires with the same reason; an AbortSignal is returned as it is", () => {
    const canceller = new Canceller()
    const signal = abortSignalOf(canceller)
    expect(signal).toBeInstanceOf(AbortSignal)
    expect(signal.aborted).toBe(false)
    canceller.abort("gone")
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBe("gone")

    const already = new Canceller()
    already.abort("before")
    expect(abortSignalOf(already).reason).toBe("before")

    const native = new AbortController().signal
    expect(abortSignalOf(native)).toBe(native)
    // An AbortSignal is a Cancellation: functions that take one take either.
    const asCancellation: Cancellation = native
    expect(asCancellation.aborted).toBe(false)
  })
})
