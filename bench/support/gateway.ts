import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
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

export const newDeployment = async (): Promise<Deployment> => {
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
      "auth:",
      `  issuer: ${baseUrl}/sso`,
      "storage:",
      "  type: sqlite",
      `  path: ${databaseFile}`,
      "admin:",
      "  mode: local",
      `  listen: 127.0.0.1:${adminPort}`,
      ""
    ].join("\n")
  )
  return { dir, configFile, databaseFile, configKey: randomBytes(32).toString("base64"), baseUrl }
}

/** `node dist/main.js serve`: a clean environment, so nothing from the bench (tsx loaders, NODE_OPTIONS) leaks in. */
export const startGateway = (entry: string, deployment: Deployment): Child =>
  startProcess("gateway", process.execPath, [entry, "serve", "--config", deployment.configFile], {
    cwd: deployment.dir,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: deployment.dir,
      GATEWAY_CONFIG_KEY: deployment.configKey
    }
  })

export const SERVING_TIMEOUT_MS = 15_000

export const isServingLine = (line: string) => line.includes('"msg":"gateway serving"')

export const waitServing = (gateway: Child) => gateway.waitForLine(isServingLine, SERVING_TIMEOUT_MS)

export const removeDeployment = (deployment: Deployment) => {
  rmSync(deployment.dir, { recursive: true, force: true })
  directories.delete(deployment.dir)
}
