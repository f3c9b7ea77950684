import { ensureBuilt } from "./build.js"
import { type Deployment, devToken, newDeployment, removeDeployment, startGateway, waitServing } from "./gateway.js"
import { grantDeveloper } from "./grant.js"
import { freePort } from "./http.js"
import { backendUrl, startMcpBackends } from "./mcp-backend.js"
import type { Child } from "./process.js"

/** 10 backends × (echo + 499 fillers) = the "5,000 tools over 10 backends". */
export const BACKENDS = 10
export const FILLER_TOOLS = 499
export const DOWN_BACKENDS = 5

export interface McpGateway {
  readonly child: Child
  readonly deployment: Deployment
  readonly mcpUrl: string
  readonly token: string
}

export interface McpFixture {
  readonly backendPorts: ReadonlyArray<number>
  /** The gateway in front of the BACKENDS live backends. */
  readonly gateway: McpGateway
  /** The same, plus DOWN_BACKENDS optional backends on ports nobody listens on. */
  readonly gatewayWithDown: McpGateway
  close(): Promise<void>
}

const backendEntry = (id: string, port: number, required: boolean) => ({
  id,
  url: backendUrl(port),
  allow_insecure_http: true,
  required,
  tool_rules: [{ tools: ["*"] }]
})

/** The tools every bench backend serves: `echo` and FILLER_TOOLS fillers (bench/support/mcp-backend-main.ts). */
const backendTools = ["echo", ...Array.from({ length: FILLER_TOOLS }, (_, at) => `tool_${String(at).padStart(4, "0")}`)]

const startMcpGateway = async (
  entry: string,
  backends: ReadonlyArray<{ readonly id: string }>
): Promise<McpGateway> => {
  const deployment = await newDeployment({ backends })
  const child = startGateway(entry, deployment, { dev: true })
  try {
    await waitServing(child)
    const token = await devToken(entry, deployment)
    // The stored access policy is on: the token's user sees every tool through a permission group.
    await grantDeveloper(deployment, Object.fromEntries(backends.map((backend) => [backend.id, backendTools])))
    return { child, deployment, mcpUrl: `${deployment.baseUrl}/mcp`, token }
  } catch (error) {
    await child.stop()
    removeDeployment(deployment)
    throw error
  }
}

const stopMcpGateway = async (gateway: McpGateway) => {
  await gateway.child.stop()
  removeDeployment(gateway.deployment)
}

/** One backend process, two gateways in front of it (the compiled bin, started with `--dev`). */
export const startMcpFixture = async (): Promise<McpFixture> => {
  const entry = await ensureBuilt()
  const backendPorts = await Promise.all(Array.from({ length: BACKENDS }, () => freePort()))
  // Ports that were free a moment ago and stay closed: connections to them are refused.
  const downPorts = await Promise.all(Array.from({ length: DOWN_BACKENDS }, () => freePort()))
  const backends = await startMcpBackends(backendPorts, FILLER_TOOLS)
  const live = backendPorts.map((port, at) => backendEntry(`b${at}`, port, true))
  const down = downPorts.map((port, at) => backendEntry(`down${at}`, port, false))
  const started: Array<McpGateway> = []
  try {
    started.push(await startMcpGateway(entry, live))
    started.push(await startMcpGateway(entry, [...live, ...down]))
  } catch (error) {
    await Promise.all(started.map(stopMcpGateway))
    await backends.stop()
    throw error
  }
  const [gateway, gatewayWithDown] = started as [McpGateway, McpGateway]
  return {
    backendPorts,
    gateway,
    gatewayWithDown,
    close: async () => {
      await Promise.all(started.map(stopMcpGateway))
      await backends.stop()
    }
  }
}
