/**
 * Runs `gateway serve` in this process (the real command: its logger, listeners and generations) and
 * measures the heap that survives a full collection before and after a load of ordinary requests:
 * `/readyz`, an unknown path, and `POST /mcp` without a token. Run with `node --expose-gc`; prints one
 * JSON line `{ "before": bytes, "after": bytes, "requests": n }` on stdout; the gateway's log goes to
 * stderr as usual. A spawned gateway cannot be asked for its heap, hence this in-process probe.
 *
 * Usage: node --expose-gc --import tsx test/support/heap-probe.ts <log_level> <requests> <port> <admin port>
 * (the ports from the test's `freePort`, which keeps them apart from every other test's).
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import { Effect } from "effect"
import { runServe } from "../../src/cli/serve.js"

const [level = "debug", amountText = "50000", portText = "", adminPortText = ""] = process.argv.slice(2)
const amount = Number(amountText)
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with node --expose-gc")

const dir = mkdtempSync(join(tmpdir(), "heap-probe-"))
const port = Number(portText)
const adminPort = Number(adminPortText)
if (!Number.isSafeInteger(port) || !Number.isSafeInteger(adminPort) || port <= 0 || adminPort <= 0)
  throw new Error("usage: heap-probe.ts <log_level> <requests> <port> <admin port>")
const file = join(dir, "gateway.yaml")
writeFileSync(
  file,
  `server: { listen: "127.0.0.1:${port}", public_url: "http://127.0.0.1:${port}/mcp" }
auth: { issuer: "http://127.0.0.1:${port}/sso" }
storage: { type: sqlite, path: "${dir}/gateway.db" }
admin: { listen: "127.0.0.1:${adminPort}" }
backends: []
log_level: ${level}
`
)
Effect.runFork(
  runServe({ configFile: file, env: { GATEWAY_CONFIG_KEY: randomBytes(32).toString("base64") }, dev: false })
)

const base = `http://127.0.0.1:${port}`
for (let attempt = 0; ; attempt++) {
  const ready = await fetch(`${base}/readyz`).then(
    (response) => response.ok,
    () => false
  )
  if (ready) break
  if (attempt > 200) throw new Error("the gateway did not become ready")
  await new Promise((done) => setTimeout(done, 50))
}

const load = async (total: number) => {
  await autocannon({
    url: base,
    connections: 16,
    amount: total,
    requests: [
      { method: "GET", path: "/readyz" },
      { method: "GET", path: "/no-such-path" },
      {
        method: "POST",
        path: "/mcp",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
      }
    ]
  })
}

const retained = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

// Warm-up: code compiled, caches and pools at their working size.
await load(5_000)
const before = retained()
await load(amount)
const after = retained()
process.stdout.write(`${JSON.stringify({ before, after, requests: amount })}\n`)
process.exit(0)
