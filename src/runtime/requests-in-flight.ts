import type { IncomingMessage, ServerResponse } from "node:http"
import { Context } from "effect"

interface Entry {
  readonly response: ServerResponse
  cancel: (() => void) | undefined
}

/**
 * The requests one generation is serving, counted from arrival to the end of the last byte: the one
 * place that knows what a generation still has to finish (cancellation and drain are the closing of
 * the generation's scope). Whoever serves a request registers how to cancel it — the Effect pipeline interrupts its
 * fiber, `POST /mcp` aborts its controller — and draining waits for the count to reach zero, told when
 * it does rather than polling.
 */
export class RequestsInFlight {
  private readonly entries = new Map<IncomingMessage, Entry>()
  private waiters: Array<() => void> = []

  get size(): number {
    return this.entries.size
  }

  /** Counts the request until its response closes. */
  add(request: IncomingMessage, response: ServerResponse): void {
    this.entries.set(request, { response, cancel: undefined })
    response.once("close", () => {
      this.entries.delete(request)
      if (this.entries.size === 0) this.wake()
    })
  }

  /** How to cancel `request` when its generation closes; a request that already ended is ignored. */
  onCancel(request: IncomingMessage, cancel: () => void): void {
    const entry = this.entries.get(request)
    if (entry !== undefined) entry.cancel = cancel
  }

  /** Resolves once no request is in flight (at once when none is). */
  whenIdle(): Promise<void> {
    if (this.entries.size === 0) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  /** Cancels every request still in flight; how many there were. Those not yet answered answer 503. */
  cancelAll(): number {
    const count = this.entries.size
    for (const entry of this.entries.values()) entry.cancel?.()
    return count
  }

  /** Closes the connection of every request still in flight (a response already streaming). */
  destroyAll(): void {
    for (const entry of this.entries.values()) entry.response.destroy()
  }

  private wake() {
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) waiter()
  }
}

/** The requests in flight of the generation a service belongs to (`POST /mcp` registers its own). */
export class GenerationRequests extends Context.Tag("gateway/GenerationRequests")<
  GenerationRequests,
  RequestsInFlight
>() {}
