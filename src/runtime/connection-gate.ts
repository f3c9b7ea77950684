import type { IncomingMessage, ServerResponse } from "node:http"
import type { Socket } from "node:net"

/** Connections kept above `server.max_connections` for health probes (docs/operations.md, "Connections"). */
export const PROBE_HEADROOM = 64
/** How long a connection in the headroom may take to ask for `/healthz` or `/readyz`. */
export const PROBE_WINDOW_MS = 1_000

/**
 * Bounds a listener's open connections (`server.max_connections`) without locking out its health
 * probes. Up to the maximum every connection is served. Above it, up to `PROBE_HEADROOM` more are
 * accepted for probes only: any other request there is answered 503 and closed, and a connection that
 * asks nothing within a second is closed. When more than that are open, the surplus is closed once the
 * bytes already received have been read (a probe's request, which asks at once, is answered by then):
 * first the oldest connections that have sent part of a request without completing it (slow ones),
 * then the oldest. A flood of idle or slow connections thus cannot keep `/healthz` and `/readyz` from
 * answering, and the process never runs out of descriptors.
 */
export class ConnectionGate {
  private open = 0
  /** Connections admitted into the headroom, oldest first (a Set keeps insertion order). */
  private readonly headroom = new Set<Socket>()
  private trimming = false

  constructor(
    public max: number,
    private readonly probeWindowMs = PROBE_WINDOW_MS
  ) {}

  get openConnections(): number {
    return this.open
  }

  admit(socket: Socket): void {
    this.open += 1
    socket.once("close", () => {
      this.open -= 1
      this.headroom.delete(socket)
    })
    if (this.open <= this.max) return
    this.headroom.add(socket)
    socket.setTimeout(this.probeWindowMs, () => socket.destroy())
    if (this.headroom.size > PROBE_HEADROOM && !this.trimming) {
      // After this turn's I/O: a probe accepted in the same burst has had its request read and answered.
      this.trimming = true
      setImmediate(() => this.trim())
    }
  }

  private trim(): void {
    this.trimming = false
    let surplus = this.headroom.size - PROBE_HEADROOM
    if (surplus <= 0) return
    const slow = [...this.headroom].filter((socket) => socket.bytesRead > 0 && socket.writableLength === 0)
    const silent = [...this.headroom].filter((socket) => socket.bytesRead === 0)
    for (const socket of [...slow, ...silent]) {
      if (surplus-- <= 0) break
      this.headroom.delete(socket)
      socket.destroy()
    }
  }

  /** The connection was admitted into the headroom: only probes are answered on it. */
  probesOnly(socket: Socket): boolean {
    return this.headroom.size > 0 && this.headroom.has(socket)
  }
}

/**
 * A request answered before its body was read (a refused token, a 405, a timeout) has its connection
 * closed once the answer is out (`Connection: close`), instead of Node reading — and waiting for — the
 * rest of a body that may trickle in for ever. A body already received keeps the connection alive.
 */
export const closeIfAnsweredEarly = (request: IncomingMessage, response: ServerResponse): void => {
  const length = request.headers["content-length"]
  const hasBody = (length !== undefined && length !== "0") || request.headers["transfer-encoding"] !== undefined
  if (!hasBody) return
  // Node marks a request `complete` only once its end is parsed, which can come after a body that
  // arrived with the headers is already buffered: a declared length fully buffered counts as received.
  const declared = length === undefined ? Number.NaN : Number(length)
  const received = () => request.complete || request.readableLength >= declared
  // The common case — a small body that came with the headers — needs nothing more: the response is
  // left as Node made it, without an own writeHead on every response.
  if (received()) return
  const writeHead = response.writeHead
  response.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse["writeHead"]>) {
    if (!received()) this.shouldKeepAlive = false
    return writeHead.apply(this, args)
  } as ServerResponse["writeHead"]
}
