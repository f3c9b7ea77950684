/**
 * The floor of the `mcp` suite's `tools/list` rows (docs/benchmarks.md): a plain node:http server that
 * answers each `tools/list` page with the bytes the gateway answered it with, looked up by the request's
 * cursor, and does nothing else — no token, no policy, no catalog. What a client spends reading those
 * pages over loopback on this machine, any server of them pays at least.
 *
 * STATIC_PAGES_PORT: where it listens; STATIC_PAGES_FILE: a JSON object of cursor ("" for the first
 * page) → the answer's body.
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const port = Number(process.env["STATIC_PAGES_PORT"])
const pages = new Map(
  Object.entries(
    JSON.parse(readFileSync(process.env["STATIC_PAGES_FILE"] ?? "", "utf8")) as Record<string, string>
  ).map(([cursor, body]) => [cursor, Buffer.from(body)] as const)
)

const server = createServer((incoming, outgoing) => {
  let body = ""
  incoming.setEncoding("utf8")
  incoming.on("data", (chunk: string) => (body += chunk))
  incoming.on("end", () => {
    const cursor = (JSON.parse(body) as { params?: { cursor?: string } }).params?.cursor ?? ""
    const page = pages.get(cursor)
    if (page === undefined) return outgoing.writeHead(404).end()
    outgoing.writeHead(200, { "content-type": "application/json", "content-length": page.length }).end(page)
  })
})
server.keepAliveTimeout = 60_000
server.listen(port, "127.0.0.1", () => process.stdout.write("listening\n"))
process.on("SIGTERM", () => server.close(() => process.exit(0)))
