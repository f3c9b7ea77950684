import { STATUS_CODES } from "node:http"
import { Readable, Transform } from "node:stream"
import type { Dispatcher } from "undici"
import { maxBackendAnswer } from "./channel.js"

/**
 * The `fetch` the MCP client uses to reach one backend: undici's `request` over the backend
 * channel's kept-alive connections (`BackendChannel.connections`), so one generation holds one set of
 * connections per backend, whichever way a request goes.
 *
 * Why not the global fetch: on Node 20 one fetch round trip costs about twice the CPU of the same
 * request over a plain HTTP client (web streams and request objects per call); see docs/benchmarks.md.
 * What the MCP client needs from fetch is kept: headers, body, abort signal, streamed
 * `text/event-stream` bodies. Redirects are returned, not followed (the MCP client follows same-origin
 * ones itself). TLS verification is Node's default and cannot be turned off here.
 */
export type BackendFetch = (url: string | URL, init?: RequestInit) => Promise<Response>

// A response to these statuses has no body by definition; `new Response` refuses one.
const nullBodyStatus = new Set([204, 205, 304])

const outgoingHeaders = (headers: RequestInit["headers"]): Record<string, string> => {
  const result: Record<string, string> = {}
  const source = headers instanceof Headers ? headers : new Headers(headers)
  source.forEach((value, name) => {
    result[name] = value
  })
  return result
}

const bodyBytes = (body: RequestInit["body"]): Buffer | undefined => {
  if (body === undefined || body === null) return undefined
  if (typeof body === "string" || body instanceof URLSearchParams) return Buffer.from(body.toString())
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  throw new TypeError("backend fetch: unsupported request body type")
}

const responseHeaders = (headers: Dispatcher.ResponseData["headers"]): Headers => {
  const result = new Headers()
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined) continue
    for (const each of Array.isArray(value) ? value : [value]) result.append(name, each)
  }
  return result
}

/**
 * `maxAnswer`: the largest JSON answer, read whole, and the largest event of an SSE answer, which is
 * streamed; as the channel's limit.
 */
export const makeBackendFetch =
  (connections: Dispatcher, maxAnswer: number = maxBackendAnswer): BackendFetch =>
  async (url, init = {}) => {
    const target = url instanceof URL ? url : new URL(url)
    if (target.protocol !== "http:" && target.protocol !== "https:") {
      throw new TypeError(`backend fetch: unsupported URL ${target.protocol}`)
    }
    const answer = await connections.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: (init.method ?? "GET") as Dispatcher.HttpMethod,
      headers: outgoingHeaders(init.headers),
      body: bodyBytes(init.body) ?? null,
      ...(init.signal === undefined || init.signal === null ? {} : { signal: init.signal })
    })
    const status = answer.statusCode
    // undici takes any three digits; a web Response only 200-599 (a 1xx is never final here).
    if (status < 200 || status > 599) {
      discard(answer.body)
      throw new TypeError(`backend fetch: the backend answered with status ${status}`)
    }
    const head = { status, statusText: STATUS_CODES[status] ?? "", headers: responseHeaders(answer.headers) }
    if (nullBodyStatus.has(status)) {
      await answer.body.dump()
      return new Response(null, head)
    }
    if ((head.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      return new Response(Readable.toWeb(boundedEvents(answer.body, maxAnswer)) as ReadableStream<Uint8Array>, head)
    }
    return new Response(await wholeBody(answer.body, maxAnswer), head)
  }

/** Closes a body nobody will read, and its connection (undici reports that as an error: not one here). */
const discard = (body: Dispatcher.ResponseData["body"]) => {
  body.on("error", () => {})
  body.destroy()
}

/** A body read whole, refused (and its connection closed) past `limit` bytes. */
const wholeBody = async (body: Dispatcher.ResponseData["body"], limit: number): Promise<Buffer> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body) {
    size += (chunk as Buffer).length
    if (size > limit) {
      discard(body)
      throw new TypeError(`backend fetch: the backend's answer is larger than ${limit} bytes`)
    }
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

// How an SSE event ends: an empty line, after LF, CRLF or CR line ends.
const eventEnds = ["\n\n", "\r\r", "\n\r\n"].map((end) => Buffer.from(end))

/**
 * An SSE body as it streams to the MCP client, cut — and its connection closed — as soon as one event
 * grows past `limit` bytes, as the channel refuses it: the client would otherwise hold an endless event.
 */
const boundedEvents = (body: Dispatcher.ResponseData["body"], limit: number): Readable => {
  let sinceEnd = 0
  let carry: Buffer<ArrayBufferLike> = Buffer.alloc(0)
  const bounded = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      // An end may span two chunks: the last bytes of the one before are searched again.
      const bytes = carry.length === 0 ? chunk : Buffer.concat([carry, chunk])
      const end = Math.max(
        ...eventEnds.map((mark) => {
          const at = bytes.lastIndexOf(mark)
          return at < 0 ? -1 : at + mark.length
        })
      )
      sinceEnd = end < 0 ? sinceEnd + chunk.length : bytes.length - end
      carry = bytes.subarray(Math.max(0, bytes.length - 2))
      if (sinceEnd > limit) {
        discard(body)
        return done(new TypeError(`backend fetch: an event of the backend's stream is larger than ${limit} bytes`))
      }
      done(null, chunk)
    }
  })
  body.on("error", (error) => bounded.destroy(error))
  bounded.on("close", () => {
    if (!body.destroyed) discard(body)
  })
  return body.pipe(bounded)
}
