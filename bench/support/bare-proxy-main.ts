/**
 * The floor the `mcp` suite measures the gateway against: the least a Node HTTP proxy can do. It
 * parses nothing — no JSON, no token, no policy — and pipes each request to the backend over a
 * keep-alive agent and the answer back, status and headers as they came. Whatever this process costs
 * per call, any Node proxy on the same machine pays at least as much (docs/benchmarks.md).
 *
 * BARE_PROXY_PORT: where it listens; BARE_PROXY_TARGET: the backend origin (http://127.0.0.1:<port>).
 */
import { Agent, createServer, type OutgoingHttpHeaders, request } from "node:http"

const port = Number(process.env["BARE_PROXY_PORT"])
const target = new URL(process.env["BARE_PROXY_TARGET"] ?? "")
const agent = new Agent({ keepAlive: true, maxSockets: 256 })
// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are not forwarded.
const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te"])

const server = createServer((incoming, outgoing) => {
  const headers: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined && !hopByHop.has(name)) headers[name] = value
  }
  headers["host"] = target.host
  const upstream = request(
    { host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers, agent },
    (answer) => {
      const back: OutgoingHttpHeaders = {}
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !hopByHop.has(name)) back[name] = value
      }
      outgoing.writeHead(answer.statusCode ?? 502, back)
      answer.pipe(outgoing)
    }
  )
  upstream.on("error", () => {
    if (!outgoing.headersSent) outgoing.writeHead(502)
    outgoing.end()
  })
  incoming.pipe(upstream)
})
server.keepAliveTimeout = 60_000
server.listen(port, "127.0.0.1", () => process.stdout.write("listening\n"))
