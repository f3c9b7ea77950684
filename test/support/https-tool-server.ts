import type { IncomingMessage, ServerResponse } from "node:http"
import { createServer, type Server } from "node:https"
import type { AddressInfo, Socket } from "node:net"
import type { TestCa } from "./test-ca.js"

/**
 * A real HTTPS service behind HTTP tools (certificate from the test CA), recording every request exactly
 * as it arrived (the raw request target, headers, body) so tests prove what the gateway sent — and what
 * it did not. Routes:
 * - `/echo/…` (any method): 200 JSON `{ method, target, path, query, headers, body }`; `/echo-escaped`:
 *   the headers as JSON whose values are all `\u` escapes;
 * - `/text`, `/array`, `/image`, `/binary`, `/bad-json`, `/no-type`: answers of those kinds;
 * - `/slow?ms=N`: answers after N ms (default 10 s); `/trickle`: sends a byte every 100 ms, for ever;
 * - `/huge?bytes=N`: N bytes of JSON-ish text, chunked (no content-length); `/huge-declared?bytes=N`:
 *   the same with its content-length;
 * - `/status/<code>`: that status with a text body that quotes the request's headers (an error page
 *   echoing what it got);
 * - `/redirect/same?to=<path>`, `/redirect/other?to=<url>` (302), `/redirect/see-other` (303 to
 *   /echo/after-303), `/redirect/loop` (to itself).
 * The other origin a redirect points at defaults to `https://localhost:<port>`: the same server under
 * another name, so a followed redirect would show up in `requests` with `host: localhost:…`.
 */

export interface RecordedRequest {
  readonly method: string
  /** The request target exactly as received (path and query, still percent-encoded). */
  readonly target: string
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: string
}

export interface HttpsToolServer {
  /** `https://127.0.0.1:<port>`. */
  readonly origin: string
  readonly port: number
  readonly requests: Array<RecordedRequest>
  close(): Promise<void>
}

const sendJson = (response: ServerResponse, status: number, value: unknown) => {
  const text = JSON.stringify(value)
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  response.end(text)
}

/** A 1×1 transparent PNG. */
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64"
)

const route = (request: IncomingMessage, response: ServerResponse, body: string, port: number) => {
  const target = request.url ?? "/"
  const url = new URL(target, `https://127.0.0.1:${port}`)
  const number = (name: string, fallback: number) => {
    const value = Number(url.searchParams.get(name))
    return Number.isFinite(value) && value > 0 ? value : fallback
  }
  const path = url.pathname
  if (path.startsWith("/echo/") || path === "/echo") {
    sendJson(response, 200, {
      method: request.method,
      target,
      path,
      query: url.search,
      headers: request.headers,
      body
    })
    return
  }
  if (path === "/echo-escaped") {
    // The request's headers as JSON with every character of their values written as a \u escape: an
    // echo a plain text search for a secret would miss.
    const escaped = Object.entries(request.headers)
      .map(([name, value]) => {
        const text = [...String(value)].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")
        return `${JSON.stringify(name)}:"${text}"`
      })
      .join(",")
    response.writeHead(200, { "content-type": "application/json" })
    response.end(`{"headers":{${escaped}}}`)
    return
  }
  if (path === "/text") {
    response.writeHead(200, { "content-type": "text/plain; charset=utf-8" })
    response.end("plain words ✓")
    return
  }
  if (path === "/array") return sendJson(response, 200, [1, "two", { three: 3 }])
  if (path === "/image") {
    response.writeHead(200, { "content-type": "image/png", "content-length": png.length })
    response.end(png)
    return
  }
  if (path === "/binary") {
    response.writeHead(200, { "content-type": "application/octet-stream" })
    response.end(Buffer.from([0, 1, 2, 255, 254]))
    return
  }
  if (path === "/bad-json") {
    response.writeHead(200, { "content-type": "application/json" })
    response.end("{not json")
    return
  }
  if (path === "/no-type") {
    response.writeHead(200)
    response.end(url.searchParams.get("binary") === null ? "untyped words" : Buffer.from([0, 159, 146, 150]))
    return
  }
  if (path === "/slow") {
    const timer = setTimeout(() => sendJson(response, 200, { slow: true }), number("ms", 10_000))
    response.once("close", () => clearTimeout(timer))
    return
  }
  if (path === "/trickle") {
    response.writeHead(200, { "content-type": "text/plain" })
    const timer = setInterval(() => response.write("."), 100)
    response.once("close", () => clearInterval(timer))
    return
  }
  if (path === "/huge" || path === "/huge-declared") {
    const bytes = number("bytes", 64 * 1024 * 1024)
    const chunk = Buffer.alloc(64 * 1024, "x")
    response.writeHead(200, {
      "content-type": "text/plain",
      ...(path === "/huge-declared" ? { "content-length": bytes } : {})
    })
    let left = bytes
    const pump = () => {
      while (left > 0) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left)
        left -= piece.length
        if (!response.write(piece)) {
          response.once("drain", pump)
          return
        }
      }
      response.end()
    }
    response.once("close", () => {
      left = 0
    })
    pump()
    return
  }
  const status = /^\/status\/([0-9]{3})$/.exec(path)
  if (status !== null) {
    response.writeHead(Number(status[1]), { "content-type": "text/plain" })
    response.end(`error page\r\nyou sent: ${JSON.stringify(request.headers)}\u0000\u001b[31m`)
    return
  }
  if (path === "/redirect/same") {
    response.writeHead(302, { location: url.searchParams.get("to") ?? "/echo/redirected" })
    response.end()
    return
  }
  if (path === "/redirect/other") {
    response.writeHead(302, { location: url.searchParams.get("to") ?? `https://localhost:${port}/echo/elsewhere` })
    response.end()
    return
  }
  if (path === "/redirect/see-other") {
    response.writeHead(303, { location: "/echo/after-303" })
    response.end()
    return
  }
  if (path === "/redirect/loop") {
    response.writeHead(307, { location: "/redirect/loop" })
    response.end()
    return
  }
  sendJson(response, 404, { error: "no such route" })
}

export const startHttpsToolServer = async (ca: TestCa): Promise<HttpsToolServer> => {
  const requests: Array<RecordedRequest> = []
  const sockets = new Set<Socket>()
  let port = 0
  const server: Server = createServer({ cert: ca.cert, key: ca.key }, (request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      requests.push({ method: request.method ?? "", target: request.url ?? "", headers: request.headers, body })
      route(request, response, body, port)
    })
  })
  server.on("secureConnection", (socket: Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
  return {
    origin: `https://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
