/**
 * The second floor the `mcp` suite measures (docs/benchmarks.md, "/mcp against a bare proxy"): the least
 * a proxy that reads what it forwards can do. Like the bare proxy it checks nothing — no token, no
 * policy, no limits — but it does what any gateway that decides on a JSON-RPC request must: reads the
 * whole request body, `JSON.parse`s it, sends it on re-serialized, reads the whole answer, parses and
 * re-serializes it. It uses what the gateway uses for the backend (undici `dispatch` on a kept-alive
 * pool with plain callbacks), so what it costs per call beyond the bare proxy is the price of reading
 * the messages, not of the gateway's own code.
 *
 * BARE_PROXY_PORT: where it listens; BARE_PROXY_TARGET: the backend origin (http://127.0.0.1:<port>).
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import { StringDecoder } from "node:string_decoder"
import { Pool } from "undici"

const port = Number(process.env["BARE_PROXY_PORT"])
const target = new URL(process.env["BARE_PROXY_TARGET"] ?? "")
const pool = new Pool(target.origin, { connections: 256, headersTimeout: 0, bodyTimeout: 0 })
const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "host"])

const forwarded = (incoming: IncomingHttpHeaders) => {
  const headers: Record<string, string> = {}
  for (const name in incoming) {
    const value = incoming[name]
    if (value !== undefined && !hopByHop.has(name) && name !== "content-length")
      headers[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return headers
}

const server = createServer((incoming, outgoing) => {
  let body = ""
  incoming.setEncoding("utf8")
  incoming.on("data", (chunk: string) => (body += chunk))
  incoming.on("end", () => {
    const message: unknown = JSON.parse(body)
    const text = new StringDecoder("utf8")
    let answer = ""
    let status = 502
    let type = ""
    pool.dispatch(
      {
        path: incoming.url ?? "/",
        method: "POST",
        headers: forwarded(incoming.headers),
        body: JSON.stringify(message)
      },
      {
        onRequestStart: () => {},
        onResponseStart: (_controller, code, headers) => {
          status = code
          type = String(headers["content-type"] ?? "")
        },
        onResponseData: (_controller, chunk) => {
          answer += text.write(chunk)
        },
        onResponseEnd: () => {
          answer += text.end()
          // JSON is read and written again; a stream (SSE) is passed on as it came.
          const out = type.startsWith("application/json") ? JSON.stringify(JSON.parse(answer)) : answer
          outgoing.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(out) }).end(out)
        },
        onResponseError: () => {
          if (!outgoing.headersSent) outgoing.writeHead(502)
          outgoing.end()
        }
      }
    )
  })
})
server.keepAliveTimeout = 60_000
server.listen(port, "127.0.0.1", () => process.stdout.write("listening\n"))
// A clean exit on SIGTERM (so `--cpu-prof` can write its profile when the bench stops it).
process.on("SIGTERM", () => server.close(() => process.exit(0)))
