import type { Caller } from "../../bearer/caller.js"
import type { View } from "../../policy/view.js"
import { type Cancellation, Canceller } from "../../runtime/cancellation.js"

/** One caller, as far as its own requests go: issuer, subject, client and session (a JSON array). */
export const callerKey = (caller: Caller): string =>
  JSON.stringify([caller.issuer, caller.subject, caller.clientId ?? "", caller.sessionId ?? ""])

/** Raised by `InFlightCalls.track` when a policy change withdrew the access the call relied on. */
export class AccessWithdrawn extends Error {
  constructor() {
    super("The call was cancelled: access to it was withdrawn while it ran.")
  }
}

/** Whether the call may go on under the caller's view after a policy change. */
export type Recheck = (view: View) => boolean

interface Tracked {
  readonly caller: Caller
  readonly canceller: Canceller
  readonly recheck: Recheck | undefined
}

const withdrawn = Symbol("access withdrawn")

/**
 * Backend calls in flight, so a `notifications/cancelled` can find the request it names, and a policy
 * change can find the calls it no longer allows (docs/access-policy.md, "Rules": affected running
 * requests are cancelled). Stateless HTTP delivers a cancellation in a request of its own, to a fresh
 * server instance; this registry (one per generation) is what links the two. Keyed by the caller as
 * well as the JSON-RPC id, so a caller can only cancel its own requests.
 */
export class InFlightCalls {
  private readonly calls = new Map<string, Tracked>()
  // A verified token's Caller is one object for as long as the token is cached, so its part of the key is built once.
  private readonly prefixes = new WeakMap<Caller, string>()

  private key(caller: Caller, requestId: string | number): string {
    let prefix = this.prefixes.get(caller)
    if (prefix === undefined) {
      prefix = callerKey(caller)
      this.prefixes.set(caller, prefix)
    }
    return prefix + JSON.stringify(requestId)
  }

  /**
   * Runs `work` with a signal that fires on `parent`, on a matching cancellation, or when a policy
   * change makes `recheck` false (then it rejects with AccessWithdrawn).
   */
  async track<T>(
    caller: Caller,
    requestId: string | number,
    parent: Cancellation,
    work: (signal: Cancellation) => Promise<T>,
    recheck?: Recheck
  ) {
    const key = this.key(caller, requestId)
    // A Canceller, not an AbortController (src/runtime/cancellation.ts), and a listener, not
    // `AbortSignal.any`: on Node 20 both cost several times more per call.
    const canceller = new Canceller()
    const abort = () => canceller.abort(parent.reason)
    if (parent.aborted) abort()
    else parent.addEventListener("abort", abort, { once: true })
    const tracked: Tracked = { caller, canceller, recheck }
    this.calls.set(key, tracked)
    try {
      return await work(canceller)
    } catch (error) {
      if (canceller.reason === withdrawn && !parent.aborted) throw new AccessWithdrawn()
      throw error
    } finally {
      parent.removeEventListener("abort", abort)
      if (this.calls.get(key) === tracked) this.calls.delete(key)
    }
  }

  cancel(caller: Caller, requestId: string | number | undefined): void {
    if (requestId === undefined) return
    this.calls.get(this.key(caller, requestId))?.canceller.abort()
  }

  /**
   * After a policy change: asks `viewOf` for each tracked caller's new view (undefined when the caller
   * may no longer use /mcp at all) and cancels every call its recheck no longer allows.
   */
  async revalidate(viewOf: (caller: Caller) => Promise<View | undefined>): Promise<number> {
    let cancelled = 0
    for (const tracked of [...this.calls.values()]) {
      if (tracked.recheck === undefined || tracked.canceller.aborted) continue
      const view = await viewOf(tracked.caller)
      if (view !== undefined && tracked.recheck(view)) continue
      tracked.canceller.abort(withdrawn)
      cancelled += 1
    }
    return cancelled
  }
}
