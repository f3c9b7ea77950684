import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { stringify } from "yaml"
import { freePort } from "./http.js"
import { type Child, startProcess } from "./process.js"

/** One throw-away deployment: its own directory, SQLite file, configuration key and ports. */
export interface Deployment {
  readonly dir: string
  readonly configFile: string
  readonly databaseFile: string
  readonly configKey: string
  readonly baseUrl: string
}

const directories = new Set<string>()

process.on("exit", () => {
  for (const dir of directories) rmSync(dir, { recursive: true, force: true })
})

/**
 * `extra`: further top-level configuration keys (backends, catalog, …), written as YAML. `sections`
 * replace the `auth` keys after `issuer` and the `storage` section (a PostgreSQL database, an upstream).
 */
export const newDeployment = async (
  extra: Readonly<Record<string, unknown>> = {},
  sections: {
    readonly auth?: Readonly<Record<string, unknown>>
    readonly storage?: Readonly<Record<string, unknown>>
  } = {}
): Promise<Deployment> => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-bench-"))
  directories.add(dir)
  const port = await freePort()
  // The admin listener gets its own free port: its default (8081) may be taken by a gateway a developer runs.
  const adminPort = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const databaseFile = join(dir, "gateway.db")
  const configFile = join(dir, "gateway.yaml")
  writeFileSync(
    configFile,
    [
      "server:",
      `  listen: 127.0.0.1:${port}`,
      `  public_url: ${baseUrl}/mcp`,
      stringify({ auth: { issuer: `${baseUrl}/sso`, ...sections.auth } }).trimEnd(),
      stringify({ storage: sections.storage ?? { type: "sqlite", path: databaseFile } }).trimEnd(),
      "admin:",
      "  mode: local",
      `  listen: 127.0.0.1:${adminPort}`,
      Object.keys(extra).length === 0 ? "" : stringify(extra)
    ].join("\n")
  )
  const configKey = randomBytes(32).toString("base64")
  // A gateway started with --dev (and `gateway dev-token`, which runs only against a development setup)
  // reads its key from the development key file, never from GATEWAY_CONFIG_KEY.
  mkdirSync(join(dir, "data"), { mode: 0o700 })
  writeFileSync(join(dir, "data/dev-config.key"), `${configKey}\n`, { mode: 0o600 })
  return { dir, configFile, databaseFile, configKey, baseUrl }
}

const gatewayEnv = (
  deployment: Deployment,
  dev: boolean,
  extra: Readonly<Record<string, string>> = {}
): Record<string, string> => ({
  PATH: process.env["PATH"] ?? "",
  HOME: deployment.dir,
  ...(dev ? {} : { GATEWAY_CONFIG_KEY: deployment.configKey }),
  ...extra
})

/**
 * `node dist/main.js serve`: a clean environment, so nothing from the bench (tsx loaders, NODE_OPTIONS)
 * leaks in. `--dev` makes it accept `gateway dev-token` tokens (see `devToken`).
 */
export const startGateway = (
  entry: string,
  deployment: Deployment,
  options: { readonly dev?: boolean; readonly env?: Readonly<Record<string, string>> } = {}
): Child =>
  startProcess(
    "gateway",
    process.execPath,
    [entry, "serve", "--config", deployment.configFile, ...(options.dev === true ? ["--dev"] : [])],
    { cwd: deployment.dir, env: gatewayEnv(deployment, options.dev === true, options.env) }
  )

/**
 * A /mcp token from `gateway dev-token`, the documented development path (docs/mcp.md): signed by the
 * deployment's development key file (the same key), accepted by a gateway started with `dev: true`.
 */
export const devToken = async (entry: string, deployment: Deployment): Promise<string> => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [entry, "dev-token", "--config", deployment.configFile],
    { cwd: deployment.dir, env: gatewayEnv(deployment, true) }
  )
  return stdout.trim()
}

export const SERVING_TIMEOUT_MS = 15_000

export const isServingLine = (line: string) => line.includes('"msg":"gateway serving"')

export const waitServing = (gateway: Child) => gateway.waitForLine(isServingLine, SERVING_TIMEOUT_MS)

export const removeDeployment = (deployment: Deployment) => {
  rmSync(deployment.dir, { recursive: true, force: true })
  directories.delete(deployment.dir)
}
