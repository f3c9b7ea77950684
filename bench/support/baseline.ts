import { tmpdir } from "node:os"
import { type Child, startProcess } from "./process.js"

/**
 * The reference server: Node's own `http` answering what /healthz answers, with the headers the gateway
 * sends on it. It is the ceiling for any Node server on this machine, so ratios against it isolate what the
 * gateway adds (routing, Effect runtime, middleware) from what the machine and Node cost anyway.
 */
const PLAIN_SERVER = `
const body = JSON.stringify({ status: "ok" })
const headers = {
  "content-type": "application/json",
  "content-length": Buffer.byteLength(body),
  "cache-control": "no-store"
}
require("node:http")
  .createServer((request, response) => {
    response.writeHead(200, headers)
    response.end(body)
  })
  .listen(Number(process.env.BENCH_PORT), "127.0.0.1", () => process.stderr.write("listening\\n"))
`

export const startPlainServer = (port: number): Child =>
  startProcess("plain node http server", process.execPath, ["-e", PLAIN_SERVER], {
    cwd: tmpdir(),
    env: { PATH: process.env["PATH"] ?? "", BENCH_PORT: String(port) }
  })
