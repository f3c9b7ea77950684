import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { Readable } from "node:stream"

/**
 * The `fetch` the MCP client uses to reach one backend: node:http(s) with keep-alive connections.
 *
 * Why not the global fetch: on Node 20 one fetch round trip costs about twice the CPU of the same
 * request over node:http (undici's web streams and request objects), and every /mcp call makes one;
 * see docs/benchmarks.md. What the MCP client needs from fetch is kept: headers, body, abort signal,
 * streamed `text/event-stream` bodies. Redirects are returned, not followed (the MCP client follows
 * same-origin ones itself). TLS verification is Node's default and cannot be turned off here.
 */
export interface BackendFetch {
  readonly fetch: (url: string | URL, init?: RequestInit) => Promise<Response>
  /** The kept-alive connections. */
  readonly agents: { readonly http: HttpAgent; readonly https: HttpsAgent }
  /** Closes the kept-alive connections (the generation is closing). */
  readonly close: () => void
}

// A response to these statuses has no body by definition; `new Response` refuses one.
const nullBodyStatus = new Set([101, 103, 204, 205, 304])

const outgoingHeaders = (headers: RequestInit["headers"], contentLength: number | undefined): OutgoingHttpHeaders => {
  const result: OutgoingHttpHeaders = {}
  const source = headers instanceof Headers ? headers : new Headers(headers)
  source.forEach((value, name) => {
    result[name] = value
  })
  if (contentLength !== undefined) result["content-length"] = contentLength
  return result
}

const bodyBytes = (body: RequestInit["body"]): Buffer | undefined => {
  if (body === undefined || body === null) return undefined
  if (typeof body === "string" || body instanceof URLSearchParams) return Buffer.from(body.toString())
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  throw new TypeError("backend fetch: unsupported request body type")
}

const responseHeaders = (incoming: IncomingMessage): Headers => {
  const headers = new Headers()
  const raw = incoming.rawHeaders
  for (let at = 0; at + 1 < raw.length; at += 2) headers.append(raw[at]!, raw[at + 1]!)
  return headers
}

const toResponse = (incoming: IncomingMessage): Promise<Response> => {
  const status = incoming.statusCode ?? 0
  const init = { status, statusText: incoming.statusMessage ?? "", headers: responseHeaders(incoming) }
  if (nullBodyStatus.has(status)) {
    incoming.resume()
    return Promise.resolve(new Response(null, init))
  }
  if ((incoming.headers["content-type"] ?? "").startsWith("text/event-stream")) {
    return Promise.resolve(new Response(Readable.toWeb(incoming) as ReadableStream<Uint8Array>, init))
  }
  return new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.once("end", () => resolve(new Response(Buffer.concat(chunks), init)))
    incoming.once("error", reject)
  })
}

export const makeBackendFetch = (): BackendFetch => {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) }
  const fetch = (url: string | URL, init: RequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const target = url instanceof URL ? url : new URL(url)
      const secure = target.protocol === "https:"
      if (!secure && target.protocol !== "http:")
        throw new TypeError(`backend fetch: unsupported URL ${target.protocol}`)
      const body = bodyBytes(init.body)
      const options = {
        method: init.method ?? "GET",
        headers: outgoingHeaders(init.headers, body?.length),
        agent: secure ? agents.https : agents.http,
        ...(init.signal === undefined || init.signal === null ? {} : { signal: init.signal })
      }
      const outgoing = (secure ? httpsRequest : httpRequest)(target, options, (incoming) => {
        toResponse(incoming).then(resolve, reject)
      })
      outgoing.once("error", reject)
      outgoing.end(body)
    })
  return {
    fetch,
    agents,
    close: () => {
      agents.http.destroy()
      agents.https.destroy()
    }
  }
}
