/**
 * Server-sent events (WHATWG HTML §9.2), as MCP's Streamable HTTP uses them: the `data` of each event,
 * fed chunk by chunk. Only what a JSON-RPC stream needs: `event` names other than `message` are skipped,
 * `id`/`retry` are ignored (the gateway never resumes a backend stream), comments are dropped.
 */
export class SseDecoder {
  private buffer = ""
  private data: Array<string> = []
  private event = ""

  constructor(private readonly onMessage: (data: string) => void) {}

  push(chunk: string): void {
    this.buffer += chunk
    let start = 0
    while (true) {
      const newline = this.buffer.indexOf("\n", start)
      if (newline < 0) break
      const end = newline > start && this.buffer.charCodeAt(newline - 1) === 13 ? newline - 1 : newline
      this.line(this.buffer.slice(start, end))
      start = newline + 1
    }
    this.buffer = this.buffer.slice(start)
  }

  /** Bytes held while waiting for the end of a line: bounded by the caller. */
  get pending(): number {
    return this.buffer.length + this.data.reduce((sum, part) => sum + part.length, 0)
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0 && (this.event === "" || this.event === "message")) this.onMessage(this.data.join("\n"))
      this.data = []
      this.event = ""
      return
    }
    if (line.startsWith(":")) return
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") this.data.push(value)
    else if (field === "event") this.event = value
  }
}

/** One SSE event carrying a serialized JSON-RPC message, as the MCP SDKs write them. */
export const sseEventText = (json: string): string => `event: message\ndata: ${json}\n\n`

export const sseEvent = (message: unknown): string => sseEventText(JSON.stringify(message))
