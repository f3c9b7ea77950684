import type { ServerResponse } from "node:http"
import { Readable } from "node:stream"
import type { ReadableStream as WebReadableStream } from "node:stream/web"
import { errorBodyText, errorHeaders, type HttpError } from "../../http/error-body.js"
import { sseEvent, sseEventText } from "../sse.js"

const jsonType = "application/json"

/**
 * The answer to one `POST /mcp`, written straight to Node's response: one JSON document with its
 * length, or — once a notification (progress) comes before the result — a request-scoped SSE stream
 * whose last event is the result. Every answer carries the request id and the CORS headers.
 */
export class Reply {
  private streaming = false

  constructor(
    readonly response: ServerResponse,
    readonly requestId: string,
    private readonly headers: Readonly<Record<string, string>>,
    /** The client accepts `text/event-stream`: notifications may be streamed before the result. */
    private readonly acceptsStream: boolean,
    /** Called when an SDK answer turns out to be a stream (`subscriptions/listen`): it may outlive request_timeout. */
    private readonly onOpenStream: () => void = () => {}
  ) {}

  /** Headers are out: the status is decided. */
  get sent(): boolean {
    return this.response.headersSent
  }

  private send(status: number, type: string, body: string, extra?: Readonly<Record<string, string>>) {
    if (this.sent) return
    this.head(status, type, Buffer.byteLength(body), extra)
    this.response.end(body)
  }

  /** The status line and headers of a whole answer of `length` bytes. */
  private head(status: number, type: string, length: number, extra?: Readonly<Record<string, string>>) {
    // Object.assign onto a fresh object rather than a spread: this runs on every answer.
    const headers: Record<string, string | number> = Object.assign({}, this.headers, extra)
    headers["content-type"] = type
    headers["content-length"] = length
    this.response.writeHead(status, headers)
  }

  /** The gateway's own error body (docs/errors.md), written as the Effect pipeline writes it. */
  error(error: HttpError): void {
    this.send(error.status, jsonType, errorBodyText(error, this.requestId), errorHeaders(error))
  }

  /** A JSON-RPC message as the whole answer. */
  message(status: number, message: unknown): void {
    if (this.streaming) {
      this.response.end(sseEvent(message))
      return
    }
    this.send(status, jsonType, JSON.stringify(message))
  }

  /**
   * A JSON-RPC response whose result is already serialized (UTF-8): written around it, in one write
   * of the socket, without copying, measuring or encoding the result again.
   */
  result(id: string | number, resultJson: Buffer): void {
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`
    if (this.streaming) {
      this.response.end(sseEventText(`${head}${resultJson.toString("utf8")}}`))
      return
    }
    if (this.sent) return
    this.head(200, jsonType, Buffer.byteLength(head) + resultJson.length + 1)
    this.response.cork()
    this.response.write(head)
    this.response.write(resultJson)
    this.response.end("}")
  }

  /**
   * A notification before the result: switches the answer to SSE. Dropped if the client takes only JSON,
   * or while the client reads slower than notifications come (progress is lossy by nature; the result is not).
   */
  notify(message: unknown): void {
    if (this.response.writableNeedDrain) return
    this.toStream(message)
  }

  /** Writes `message` as an SSE event, opening the stream first; false when the client takes no stream. */
  private toStream(message: unknown): boolean {
    if (!this.acceptsStream || this.response.writableEnded) return false
    if (!this.streaming) {
      if (this.sent) return false
      this.streaming = true
      this.response.writeHead(200, {
        ...this.headers,
        "content-type": "text/event-stream",
        "cache-control": "no-cache"
      })
    }
    this.response.write(sseEvent(message))
    return true
  }

  /**
   * A request to the client on this answer's stream (a request for input: docs/mcp.md, "Input requests"),
   * switching to SSE; unlike a notification it is never dropped. False when the client takes no stream.
   */
  request(message: unknown): boolean {
    return this.toStream(message)
  }

  /** `202 Accepted` with no body: a client's answer was taken (a JSON-RPC response it POSTed). */
  accepted(): void {
    if (this.sent) return
    this.response.writeHead(202, this.headers)
    this.response.end()
  }

  /** Ends an answer that can say nothing more (a stream cut off by a cancellation). */
  end(): void {
    if (!this.response.writableEnded) this.response.end()
  }

  /**
   * A web Response from the MCP SDK's handler. A JSON answer is complete when the SDK returns it and is
   * sent in one write with its length; only an SSE answer (progress, `subscriptions/listen`) is streamed.
   */
  async web(response: Response): Promise<void> {
    if (this.sent) {
      await response.body?.cancel().catch(() => {})
      return
    }
    const headers: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      headers[name] = value
    })
    Object.assign(headers, this.headers)
    const type = response.headers.get("content-type") ?? ""
    if (response.body === null) {
      this.response.writeHead(response.status, headers)
      this.response.end()
      return
    }
    if (!type.startsWith("text/event-stream")) {
      const body = Buffer.from(await response.arrayBuffer())
      if (this.sent) return
      this.response.writeHead(response.status, { ...headers, "content-length": String(body.length) })
      this.response.end(body)
      return
    }
    this.onOpenStream()
    this.response.writeHead(response.status, headers)
    const stream = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>)
    stream.on("error", () => this.response.destroy())
    this.response.once("close", () => stream.destroy())
    stream.pipe(this.response)
  }
}
