import type { IncomingMessage, ServerResponse } from "node:http"
import type { Socket } from "node:net"

/** Connections kept above `server.max_connections` for health probes (docs/operations.md, "Connections"). */
export const PROBE_HEADROOM = 64
/** How long a connection in the headroom may take to ask for `/healthz` or `/readyz`. */
export const PROBE_WINDOW_MS = 1_000

/** A silent connection in the headroom this young may still be a probe whose request is on its way. */
export const SILENT_GRACE_MS = 250

/**
 * Bounds a listener's open connections (`server.max_connections`) without locking out its health
 * probes. Up to the maximum every connection is served. Above it, up to `PROBE_HEADROOM` more are
 * accepted for probes only: any other request there is answered 503 and closed, and a connection that
 * asks nothing within a second is closed. When more than that are open, the surplus is closed once the
 * bytes already received have been read: first connections that have sent part of a request without
 * completing it (slow ones: a probe's request is answered as soon as it is in), then silent ones older
 * than `SILENT_GRACE_MS`, oldest first. A silent connection younger than that may be a probe about to
 * ask, and is closed only past twice the headroom. A flood of idle or slow connections thus cannot keep
 * `/healthz` and `/readyz` from answering, and descriptors stay bounded.
 */
export class ConnectionGate {
  private open = 0
  /** Connections admitted into the headroom and when, oldest first (a Map keeps insertion order). */
  private readonly headroom = new Map<Socket, number>()
  private trimming = false

  constructor(
    public max: number,
    private readonly probeWindowMs = PROBE_WINDOW_MS,
    private readonly silentGraceMs = SILENT_GRACE_MS
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
    this.headroom.set(socket, Date.now())
    socket.setTimeout(this.probeWindowMs, () => socket.destroy())
    this.scheduleTrim(0)
  }

  /** After this turn's I/O (a probe accepted in the same burst has had its request read), or later. */
  private scheduleTrim(delayMs: number): void {
    if (this.headroom.size <= PROBE_HEADROOM || this.trimming) return
    this.trimming = true
    const run = () => {
      this.trimming = false
      this.trim()
    }
    if (delayMs === 0) setImmediate(run)
    else setTimeout(run, delayMs).unref()
  }

  private trim(): void {
    let surplus = this.headroom.size - PROBE_HEADROOM
    if (surplus <= 0) return
    const now = Date.now()
    const slow: Array<Socket> = []
    const idle: Array<Socket> = []
    const young: Array<Socket> = []
    for (const [socket, admittedAt] of this.headroom) {
      if (socket.bytesRead > 0) {
        if (socket.writableLength === 0) slow.push(socket)
      } else if (now - admittedAt >= this.silentGraceMs) idle.push(socket)
      else young.push(socket)
    }
    // Young silent ones go only past twice the headroom: the bound on descriptors holds regardless.
    const pastBound = Math.max(0, this.headroom.size - 2 * PROBE_HEADROOM)
    const victims = [...slow, ...idle, ...young.slice(0, pastBound)]
    for (const socket of victims) {
      if (surplus-- <= 0) break
      this.headroom.delete(socket)
      socket.destroy()
    }
    // Young ones left over the headroom are looked at again once their grace is over.
    this.scheduleTrim(this.silentGraceMs)
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
