import { readFileSync } from "node:fs"
import { Either } from "effect"
import type { Env } from "../config/expand.js"
import { parseConfig } from "../config/load.js"
import { demoHost } from "./serve.js"

/**
 * Why the configuration's `demo` backend would not reach the demo notes backend `npm start` runs on
 * `port`; undefined when it would, when the file names no `demo` backend (the demo then runs unused), or
 * when the file cannot be read or is invalid (the gateway then says why, with every problem).
 *
 * Checked before anything starts: a file whose ports were moved but whose `demo` backend still points at
 * 8090 would connect that backend to whatever answers there — another `npm start`'s demo — and send it
 * the demo user's calls, with nothing to show for it but a healthy `backend connected`.
 */
export const demoTargetProblem = (file: string, port: number, env: Env): string | undefined => {
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch {
    return undefined
  }
  const loaded = parseConfig(file, text, env)
  if (Either.isLeft(loaded)) return undefined
  const demo = loaded.right.config.backends.find((backend) => backend.id === "demo")
  if (demo === undefined) return undefined
  const url = URL.parse(demo.url)
  const reaches =
    url !== null &&
    url.protocol === "http:" &&
    (url.hostname === demoHost || url.hostname === "localhost") &&
    (url.port === "" ? "80" : url.port) === String(port)
  if (reaches) return undefined
  return (
    `${file}: the \`demo\` backend points at ${demo.url}, but the demo notes backend starts on ` +
    `http://${demoHost}:${port}/mcp (--demo-port ${port}). Point the \`demo\` backend's url there, or pass the ` +
    "--demo-port its url names. The gateway was not started."
  )
}
