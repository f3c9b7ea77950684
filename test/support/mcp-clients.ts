import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"

/** An MCP client SDK 2.x connected to the gateway with a bearer token; `era` picks the protocol revision. */
export const connectClient = async (url: string, token: string, era: "modern" | "legacy" = "modern") => {
  const client = new Client(
    { name: "test-client", version: "1.0.0" },
    { versionNegotiation: { mode: era === "modern" ? "auto" : "legacy" } }
  )
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: { token: async () => token } }))
  return client
}

/** The 1.x SDK client (2025-era only), as older hosts still ship it. */
export const connectV1Client = async (url: string, token: string) => {
  const { Client: V1Client } = await import("@modelcontextprotocol/sdk/client/index.js")
  const { StreamableHTTPClientTransport: V1Transport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  )
  const client = new V1Client({ name: "old-client", version: "1.0.0" })
  await client.connect(
    new V1Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } })
  )
  return client
}

/** A raw JSON-RPC POST to /mcp (2025-era headers), for the error cases SDK clients never produce. */
/** A 2025-era `tools/list` (no envelope), as a raw request body. */
export const toolsListBody = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })

/** `tools/list` on /mcp at `mcpUrl` with a bearer token. */
export const postToolsList = (mcpUrl: string, token: string) =>
  rawPost(mcpUrl, toolsListBody, { authorization: `Bearer ${token}` })

export const rawPost = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body
  })

/** Reads a JSON or single-event SSE answer of /mcp as its JSON-RPC message. */
export const jsonRpcOf = async (response: Response): Promise<Record<string, unknown>> => {
  const text = await response.text()
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) return JSON.parse(text)
  const data = text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6))
  return JSON.parse(data.at(-1) ?? "{}")
}
