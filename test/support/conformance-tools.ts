/**
 * vitest `globalSetup`: the MCP conformance suite and the Node it needs (tools/conformance, pinned by its
 * own package-lock.json) are installed there with `npm ci` when missing — a fresh clone's `npm test`
 * needs no step of its own (`.ci/run` installs them up front). They are kept out of the project's own
 * dependencies because npm would link their `node` (24) into node_modules/.bin, and every npm script
 * would then run on it instead of the project's Node.
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const directory = fileURLToPath(new URL("../../tools/conformance", import.meta.url))

export default function setup(): void {
  if (existsSync(`${directory}/node_modules/@modelcontextprotocol/conformance/package.json`)) return
  process.stderr.write("Installing the MCP conformance suite into tools/conformance (npm ci) …\n")
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: directory, stdio: ["ignore", "inherit", "inherit"] })
}
