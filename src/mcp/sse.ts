/**
 * Server-sent events (WHATWG HTML §9.2), as MCP's Streamable HTTP uses them: the `data` of each event,
 * fed chunk by chunk. Only what a JSON-RPC stream needs: `event` names other than `message` are skipped,
 * `id`/`retry` are ignored (the gateway never resumes a backend stream), comments are dropped.
 */
export class SseDecoder {
  // The line being received, in the pieces it came in: searched for its end only in each new piece,
  // and joined once, when it ends (cost linear in the bytes, however the stream is cut).
  private partial: Array<string> = []
  private data: Array<string> = []
  private event = ""
  private partialCost = 0
  private dataCost = 0
  private afterCr = false
  private readonly lineEnd = /\r\n|\r|\n/g

  constructor(private readonly onMessage: (data: string) => void) {}

  push(chunk: string): void {
    // A slice of `chunk` keeps the whole chunk alive: what is held from it is charged the chunk, once.
    let pinned = false
    // A line ends at CRLF, LF or CR; a CRLF cut between two chunks ends one line, not two.
    let start = this.afterCr && chunk.charCodeAt(0) === 10 ? 1 : 0
    this.afterCr = false
    // Most streams end lines with LF alone: a plain search then, the pattern only when a CR is there.
    const crs = chunk.indexOf("\r", start) >= 0
    const lineEnd = this.lineEnd
    while (true) {
      let end: number
      let next: number
      if (crs) {
        lineEnd.lastIndex = start
        const found = lineEnd.exec(chunk)
        if (found === null) break
        end = found.index
        next = end + found[0].length
        if (found[0] === "\r" && next === chunk.length) this.afterCr = true
      } else {
        end = chunk.indexOf("\n", start)
        if (end < 0) break
        next = end + 1
      }
      let line = chunk.slice(start, end)
      // A line completed from held pieces is a new string: charged its own length (and the chunk).
      let joined = 0
      if (this.partial.length > 0) {
        line = this.partial.join("") + line
        joined = line.length
        this.partial = []
        this.partialCost = 0
      }
      if (this.line(line, joined + (pinned ? PIECE_COST : chunk.length + PIECE_COST))) pinned = true
      start = next
    }
    if (start < chunk.length) {
      this.partial.push(start === 0 ? chunk : chunk.slice(start))
      this.partialCost += pinned ? PIECE_COST : chunk.length + PIECE_COST
    }
  }

  /**
   * What is held while an event or a line is incomplete, for the caller to bound: the chunks held
   * strings are slices of, plus `PIECE_COST` for each piece and each data line, so a stream of empty or
   * one-character lines, of one-byte pieces, or of small data lines among large comments, reaches the
   * bound as its memory does.
   */
  get pending(): number {
    return this.partialCost + this.dataCost
  }

  /** One line of the stream; true when it is held (a data line), charged `cost`. */
  private line(line: string, cost: number): boolean {
    if (line === "") {
      if (this.data.length > 0 && (this.event === "" || this.event === "message")) this.onMessage(this.data.join("\n"))
      this.data = []
      this.dataCost = 0
      this.event = ""
      return false
    }
    if (line.startsWith(":")) return false
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") {
      this.data.push(value)
      this.dataCost += cost
      return true
    }
    if (field === "event") this.event = value
    return false
  }
}

/** What one held string costs beyond its characters (object header, array slot), in the bound above. */
export const PIECE_COST = 64

/** One SSE event carrying a serialized JSON-RPC message, as the MCP SDKs write them. */
export const sseEventText = (json: string): string => `event: message\ndata: ${json}\n\n`

export const sseEvent = (message: unknown): string => sseEventText(JSON.stringify(message))
