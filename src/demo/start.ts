/**
 * `npm start`: the demo notes backend on 127.0.0.1:8090, then `gateway serve --config
 * config/gateway.yaml --dev` in the same process. The demo backend is optional in that configuration,
 * so a taken port only costs the demo tools (logged), never the gateway.
 */
import { runCli } from "../cli/run.js"
import { demoPort, startDemoBackend } from "./serve.js"

try {
  await startDemoBackend()
  process.stderr.write(`demo notes backend listening on http://127.0.0.1:${demoPort}/mcp\n`)
} catch (error) {
  process.stderr.write(`demo notes backend not started: ${error instanceof Error ? error.message : String(error)}\n`)
}
runCli(undefined, [process.argv[0] ?? "node", "gateway", "serve", "--config", "config/gateway.yaml", "--dev"])
