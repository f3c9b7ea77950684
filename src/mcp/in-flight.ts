import type { Caller } from "../auth/caller.js"

/**
 * Backend calls in flight, so a `notifications/cancelled` can find the request it names. Stateless
 * HTTP delivers that notification in a request of its own, to a fresh server instance; this registry
 * (one per generation) is what links the two. Keyed by the caller as well as the JSON-RPC id, so a
 * caller can only cancel its own requests.
 */
export class InFlightCalls {
  private readonly calls = new Map<string, AbortController>()

  private static key(caller: Caller, requestId: string | number): string {
    return JSON.stringify([caller.issuer, caller.subject, caller.clientId ?? "", caller.sessionId ?? "", requestId])
  }

  /** Runs `work` with a signal that fires on `parent` or on a matching cancellation. */
  async track<T>(
    caller: Caller,
    requestId: string | number,
    parent: AbortSignal,
    work: (signal: AbortSignal) => Promise<T>
  ) {
    const key = InFlightCalls.key(caller, requestId)
    const controller = new AbortController()
    // A listener, not `AbortSignal.any`: on Node 20 that costs several times more per call and keeps
    // weak references for the garbage collector to clean up.
    const abort = () => controller.abort(parent.reason)
    if (parent.aborted) abort()
    else parent.addEventListener("abort", abort, { once: true })
    this.calls.set(key, controller)
    try {
      return await work(controller.signal)
    } finally {
      parent.removeEventListener("abort", abort)
      if (this.calls.get(key) === controller) this.calls.delete(key)
    }
  }

  cancel(caller: Caller, requestId: string | number | undefined): void {
    if (requestId === undefined) return
    this.calls.get(InFlightCalls.key(caller, requestId))?.abort()
  }
}
