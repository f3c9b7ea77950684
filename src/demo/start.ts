/**
 * `npm start`: ONE Node process serving the demo notes backend and `gateway serve --dev` (package.json
 * runs it as `exec node --import tsx …`, so no shell or tsx process stands between npm and it). npm
 * forwards SIGINT and SIGTERM here, where the gateway drains and exits; SIGHUP sent to this process
 * reloads the configuration. The process exits with the gateway's exit code, and the demo backend,
 * being part of it, goes with it. A demo port that cannot be listened on (taken, most likely) stops
 * `npm start` before the gateway starts:
 * the gateway would otherwise connect its `demo` backend to whatever listens there (another
 * `npm start`'s demo, or any other program) and send it the demo user's calls.
 *
 *   npm start [-- --config <file>] [--demo-port <port>]
 *
 * `--config` defaults to config/gateway.yaml; `--demo-port` (default 8090) must be where that file's
 * `demo` backend points: a file whose `demo` backend points elsewhere stops `npm start` (exit 2) before
 * anything starts (demo-target.ts).
 */
import { parseArgs } from "node:util"
import { runCli } from "../cli/run.js"
import { demoTargetProblem } from "./demo-target.js"
import { stopWithParent } from "./parent.js"
import { demoPort, startDemoBackend } from "./serve.js"

const usage = "usage: npm start [-- --config <file>] [--demo-port <port>]"

const options = (() => {
  try {
    const { values } = parseArgs({
      options: { config: { type: "string" }, "demo-port": { type: "string" } },
      strict: true,
      allowPositionals: false
    })
    const port = values["demo-port"] === undefined ? demoPort : Number(values["demo-port"])
    if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error("--demo-port: expected 1-65535")
    return { config: values.config ?? "config/gateway.yaml", port }
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${usage}\n`)
    process.exit(2)
  }
})()

const mismatch = demoTargetProblem(options.config, options.port, process.env)
if (mismatch !== undefined) {
  process.stderr.write(`npm start: ${mismatch}\n`)
  process.exit(2)
}

try {
  await startDemoBackend(options.port)
  process.stderr.write(`demo notes backend listening on http://127.0.0.1:${options.port}/mcp\n`)
} catch (error) {
  // The gateway would take whatever answers on the demo's port (another `npm start`'s demo, or any other
  // program) for its `demo` backend and send it the demo user's calls: it is not started.
  const inUse = (error as NodeJS.ErrnoException).code === "EADDRINUSE"
  const why = inUse
    ? "the port is in use, most likely by another `npm start`"
    : error instanceof Error
      ? error.message
      : String(error)
  process.stderr.write(
    `npm start: the demo notes backend cannot listen on 127.0.0.1:${options.port}: ${why}. ` +
      "Stop what holds it, or pass --demo-port <port> with a --config whose `demo` backend points at that port. The gateway was not started.\n"
  )
  process.exit(1)
}
process.stderr.write(
  `gateway process ${process.pid}: Ctrl-C stops it, kill -HUP ${process.pid} reloads its configuration\n`
)
stopWithParent()
runCli(undefined, [process.argv[0] ?? "node", "gateway", "serve", "--config", options.config, "--dev"])
