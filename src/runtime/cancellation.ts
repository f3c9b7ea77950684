/**
 * What /mcp's hot path asks of a cancellation signal: whether and why it fired, and "tell me when it
 * does". `AbortSignal` has this shape, so every function taking a `Cancellation` takes an
 * `AbortSignal` too (the MCP SDK's handler passes its own).
 */
export interface Cancellation {
  readonly aborted: boolean
  readonly reason: unknown
  addEventListener(type: "abort", listener: () => void, options?: { readonly once?: boolean }): void
  removeEventListener(type: "abort", listener: () => void): void
}

/**
 * A cancellation for one request or one call (docs/decisions.md, "Per-call overhead"): an
 * `AbortController` and its signal in one small object. On Node 20 every `AbortController` builds its
 * `AbortSignal` as an `EventTarget` with a prototype of its own map, and adding or removing a listener
 * goes through the `EventTarget` machinery: with two per forwarded call that was 6-7 % of the gateway's
 * CPU at 32 connections. Same semantics for what the gateway uses:
 * - listeners run once, synchronously, in the order they were added, when `abort` is first called;
 * - one removed by a listener before its turn does not run;
 * - one added after the first call never runs, also when a listener adds it (the DOM's rule; Node 20's
 *   EventTarget would run that one, and no caller adds a listener to an aborted signal);
 * - adding one twice adds it once;
 * - a listener that throws does not keep the others from running, and its error is reported as an
 *   uncaught exception, as `EventTarget` reports it;
 * - `aborted` and `reason` are read-only.
 *
 * Where a real `AbortSignal` is needed (fetch, the MCP SDK), `abortSignalOf` makes one that follows.
 */
export class Canceller implements Cancellation {
  private fired = false
  private why: unknown = undefined
  // Removed while the abort runs: left as a hole, so the running loop skips it (as EventTarget does).
  private listeners: Array<(() => void) | undefined> | undefined = undefined

  get aborted(): boolean {
    return this.fired
  }

  get reason(): unknown {
    return this.why
  }

  /** Fires once; `reason` defaults to an `AbortError`, as `AbortController.abort()` gives. */
  abort(reason: unknown = new DOMException("This operation was aborted", "AbortError")): void {
    if (this.fired) return
    this.fired = true
    this.why = reason
    const listeners = this.listeners
    if (listeners === undefined) return
    for (let at = 0; at < listeners.length; at++) {
      const listener = listeners[at]
      if (listener === undefined) continue
      listeners[at] = undefined
      try {
        listener()
      } catch (error) {
        process.nextTick(() => {
          throw error
        })
      }
    }
    this.listeners = undefined
  }

  /** Every listener runs at most once (`once` or not): the abort happens once. */
  addEventListener(_type: "abort", listener: () => void, _options?: { readonly once?: boolean }): void {
    if (this.fired) return
    if (this.listeners === undefined) this.listeners = [listener]
    else if (!this.listeners.includes(listener)) this.listeners.push(listener)
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const listeners = this.listeners
    if (listeners === undefined) return
    const at = listeners.indexOf(listener)
    if (at < 0) return
    if (this.fired) listeners[at] = undefined
    else listeners.splice(at, 1)
  }
}

/** `cancellation` as an `AbortSignal`: itself when it is one, else a signal that fires (with its reason) when it does. */
export const abortSignalOf = (cancellation: Cancellation): AbortSignal => {
  if (cancellation instanceof AbortSignal) return cancellation
  const controller = new AbortController()
  if (cancellation.aborted) controller.abort(cancellation.reason)
  else cancellation.addEventListener("abort", () => controller.abort(cancellation.reason), { once: true })
  return controller.signal
}
