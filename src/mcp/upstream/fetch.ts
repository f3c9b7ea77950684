import { STATUS_CODES } from "node:http"
import { Readable, Transform } from "node:stream"
import type { Dispatcher } from "undici"
import { isRecord } from "../../json.js"
import type { AnswerBudget, AnswerHold } from "./answer-budget.js"
import { type BackendChannel, maxBackendAnswer } from "./channel.js"

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
 * Bytes of each of a backend's lists (tools, prompts, resources, templates), counted across its pages by
 * the fetch: a list's count starts again at its first page (a request without a cursor), so a list read
 * again — a refresh, the client's own re-read before a call — is counted on its own. Past
 * `MAX_LIST_BYTES` the page being read fails, and so does the read: a backend listing more is taken for
 * down (its earlier catalog, if any, is kept).
 */
export type CatalogBytes = Map<string, number>

/** One list of a backend, every page of it, in bytes (docs/mcp.md, "Backends"). */
export const MAX_LIST_BYTES = 16 * 1024 * 1024

const listRequest = /"method"\s*:\s*"((?:tools|prompts|resources|resources\/templates)\/list)"/

/** The list a request reads, and whether it asks for the first page; undefined for any other request. */
const listOf = (body: string): { readonly method: string; readonly first: boolean } | undefined => {
  const method = listRequest.exec(body)?.[1]
  if (method === undefined) return undefined
  try {
    const message: unknown = JSON.parse(body)
    const params = isRecord(message) ? message["params"] : undefined
    return { method, first: !isRecord(params) || params["cursor"] === undefined }
  } catch {
    return undefined
  }
}

/**
 * `maxAnswer`: the largest JSON answer, read whole, and the largest event of an SSE answer, which is
 * streamed; as the channel's limit. `answers`: the gateway-wide count of answer bytes held
 * (src/mcp/upstream/answer-budget.ts), which what this path reads is added to while it is read, and
 * never refused by: a catalog page refused would make the worker take the backend for down — the
 * catalog has a bound of its own instead, `catalog` (`MAX_LIST_BYTES` per list).
 */
export const makeBackendFetch =
  (
    channel: Pick<BackendChannel, "connections" | "forget">,
    maxAnswer: number = maxBackendAnswer,
    answers?: AnswerBudget,
    catalog?: CatalogBytes
  ): BackendFetch =>
  async (url, init = {}) => {
    const target = url instanceof URL ? url : new URL(url)
    if (target.protocol !== "http:" && target.protocol !== "https:") {
      throw new TypeError(`backend fetch: unsupported URL ${target.protocol}`)
    }
    // The MCP client answering a request the backend sent it (a ping on the event stream, say): nobody
    // reads what the backend says back, so it goes the channel's bounded way, and the client is told 202.
    if (init.method === "POST" && typeof init.body === "string" && isAnswer(init.body)) {
      channel.forget(`${target.pathname}${target.search}`, outgoingHeaders(init.headers), init.body)
      return new Response(null, { status: 202, statusText: "Accepted" })
    }
    const { connections } = channel
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
    // A list page counts in its list's bytes, whichever way it is answered.
    const list = catalog !== undefined && typeof init.body === "string" ? listOf(init.body) : undefined
    if (list?.first === true) catalog?.set(list.method, 0)
    const body =
      list === undefined || catalog === undefined ? answer.body : countedBody(answer.body, catalog, list.method)
    const head = { status, statusText: STATUS_CODES[status] ?? "", headers: responseHeaders(answer.headers) }
    if (nullBodyStatus.has(status)) {
      await answer.body.dump()
      return new Response(null, head)
    }
    if ((head.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      // The standing stream (GET) carries the backend's own notifications and requests, as often as it
      // likes: past `maxStreamEventsPerSecond` it is closed (the MCP client opens it again, later).
      const rate = init.method === "GET" ? maxStreamEventsPerSecond : undefined
      return new Response(
        Readable.toWeb(
          boundedEvents(body, maxAnswer, rate, answers?.hold(Number.POSITIVE_INFINITY))
        ) as ReadableStream<Uint8Array>,
        head
      )
    }
    return new Response(await wholeBody(body, maxAnswer, answers?.hold(Number.POSITIVE_INFINITY)), head)
  }

/** `body`, its bytes added to its list's; past `MAX_LIST_BYTES` it fails and its connection closes. */
const countedBody = (
  body: Dispatcher.ResponseData["body"],
  catalog: CatalogBytes,
  method: string
): Dispatcher.ResponseData["body"] => {
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const used = (catalog.get(method) ?? 0) + chunk.length
      catalog.set(method, used)
      if (used > MAX_LIST_BYTES) {
        discard(body)
        return done(new TypeError(`backend fetch: the backend's ${method} is larger than ${MAX_LIST_BYTES} bytes`))
      }
      done(null, chunk)
    }
  })
  body.on("error", (error) => counted.destroy(error))
  counted.on("close", () => {
    if (!body.destroyed) discard(body)
  })
  return body.pipe(counted) as unknown as Dispatcher.ResponseData["body"]
}

/** Whether `body` is a JSON-RPC response (an answer to the backend's request), not a request or notification. */
const isAnswer = (body: string): boolean => {
  try {
    const message: unknown = JSON.parse(body)
    return isRecord(message) && !("method" in message) && "id" in message && ("result" in message || "error" in message)
  } catch {
    return false
  }
}

/** Closes a body nobody will read, and its connection (undici reports that as an error: not one here). */
const discard = (body: Dispatcher.ResponseData["body"]) => {
  body.on("error", () => {})
  body.destroy()
}

/** A body read whole, refused (and its connection closed) past `limit` bytes; counted in `hold` while it is read. */
const wholeBody = async (body: Dispatcher.ResponseData["body"], limit: number, hold?: AnswerHold): Promise<Buffer> => {
  const chunks: Array<Buffer> = []
  let size = 0
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length
      if (size > limit) {
        discard(body)
        throw new TypeError(`backend fetch: the backend's answer is larger than ${limit} bytes`)
      }
      hold?.to(size)
      chunks.push(chunk as Buffer)
    }
    return Buffer.concat(chunks)
  } finally {
    hold?.release()
  }
}

/** Events a second a backend's standing stream may carry; more closes it. */
export const maxStreamEventsPerSecond = 200

/** How often `mark` occurs in `bytes`, without overlaps. */
const countOf = (bytes: Buffer, mark: Buffer): number => {
  let count = 0
  for (let at = bytes.indexOf(mark); at >= 0; at = bytes.indexOf(mark, at + mark.length)) count += 1
  return count
}

const LF = 10
const CR = 13
const eventEnd = Buffer.from("\n\n")

/**
 * An SSE body as it streams to the MCP client, with its line ends made LF (CRLF and a lone CR, as SSE
 * allows them: the client's parser slows to a crawl on CRs in long chunks), cut — and its connection
 * closed — as soon as one event grows past `limit` bytes, as the channel refuses it: the client would
 * otherwise hold an endless event. The event being received is counted in `hold` until it ends.
 */
const boundedEvents = (
  body: Dispatcher.ResponseData["body"],
  limit: number,
  perSecond?: number,
  hold?: AnswerHold
): Readable => {
  let sinceEnd = 0
  // Events counted in the current second (only when `perSecond` is given).
  let second = 0
  let events = 0
  // The last byte of the chunk before (an event's end may span two chunks), and whether it was a CR.
  let last = -1
  let afterCr = false
  const toLf = (chunk: Buffer): Buffer => {
    if (chunk.indexOf(CR) < 0) {
      const skip = afterCr && chunk[0] === LF
      afterCr = false
      return skip ? chunk.subarray(1) : chunk
    }
    const out = Buffer.allocUnsafe(chunk.length)
    let length = 0
    for (const byte of chunk) {
      if (byte === LF && afterCr) {
        afterCr = false
        continue
      }
      afterCr = byte === CR
      out[length++] = afterCr ? LF : byte
    }
    return out.subarray(0, length)
  }
  const bounded = new Transform({
    transform(raw: Buffer, _encoding, done) {
      const chunk = toLf(raw)
      if (chunk.length === 0) return done()
      // An event ended where the chunk before left off with LF and this one starts with one.
      const ended = last === LF && chunk[0] === LF
      const at = chunk.lastIndexOf(eventEnd)
      const end = at >= 0 ? at + 2 : ended ? 1 : -1
      sinceEnd = end < 0 ? sinceEnd + chunk.length : chunk.length - end
      last = chunk[chunk.length - 1]!
      if (sinceEnd > limit) {
        discard(body)
        return done(new TypeError(`backend fetch: an event of the backend's stream is larger than ${limit} bytes`))
      }
      hold?.to(sinceEnd)
      if (perSecond !== undefined) {
        const now = Math.floor(Date.now() / 1000)
        if (now !== second) {
          second = now
          events = 0
        }
        events += (ended ? 1 : 0) + countOf(chunk, eventEnd)
        if (events > perSecond) {
          discard(body)
          return done(new TypeError(`backend fetch: the backend's stream sent more than ${perSecond} events a second`))
        }
      }
      done(null, chunk)
    }
  })
  body.on("error", (error) => bounded.destroy(error))
  bounded.on("close", () => {
    hold?.release()
    if (!body.destroyed) discard(body)
  })
  return body.pipe(bounded)
}
