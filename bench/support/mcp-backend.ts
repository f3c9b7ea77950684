import { projectRoot } from "./build.js"
import { type Child, startProcess } from "./process.js"

const entry = new URL("./mcp-backend-main.ts", import.meta.url).pathname

/**
 * Starts the bench MCP backend process (bench/support/mcp-backend-main.ts): one MCP server per port,
 * each with `echo` and `fillerTools` more tools. Resolves once every port listens.
 */
export const startMcpBackends = async (ports: ReadonlyArray<number>, fillerTools: number): Promise<Child> => {
  const child = startProcess("bench MCP backend", process.execPath, ["--import", "tsx", entry], {
    cwd: projectRoot,
    env: { PATH: process.env["PATH"] ?? "", BENCH_PORTS: ports.join(","), BENCH_TOOLS: String(fillerTools) }
  })
  await child
    .waitForLine((line) => line === "listening", 20_000)
    .catch(async (error: unknown) => {
      await child.stop()
      throw error
    })
  return child
}

export const backendUrl = (port: number) => `http://127.0.0.1:${port}/mcp`
