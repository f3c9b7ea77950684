import type { Caller } from "../auth/caller.js"

/**
 * Backend calls in flight, so a `notifications/cancelled` can find the request it names. Stateless
 * HTTP delivers that notification in a request of its own, to a fresh server instance; this registry
 * (one per generation) is what links the two. Keyed by the caller as well as the JSON-RPC id, so a
 * caller can only cancel its own requests.
 */
export class InFlightCalls {
  private readonly calls = new Map<string, AbortController>()
  // A verified token's Caller is one object for as long as the token is cached, so its part of the key is built once.
  private readonly prefixes = new WeakMap<Caller, string>()

  private key(caller: Caller, requestId: string | number): string {
    let prefix = this.prefixes.get(caller)
    if (prefix === undefined) {
      prefix = JSON.stringify([caller.issuer, caller.subject, caller.clientId ?? "", caller.sessionId ?? ""])
      this.prefixes.set(caller, prefix)
    }
    return prefix + JSON.stringify(requestId)
  }

  /** Runs `work` with a signal that fires on `parent` or on a matching cancellation. */
  async track<T>(
    caller: Caller,
    requestId: string | number,
    parent: AbortSignal,
    work: (signal: AbortSignal) => Promise<T>
  ) {
    const key = this.key(caller, requestId)
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
    this.calls.get(this.key(caller, requestId))?.abort()
  }
}
