import { Agent, request } from "node:http"

/**
 * The raw JSON-RPC client both paths are measured with: node:http on one keep-alive connection, timed
 * with `process.hrtime` (sub-millisecond), so the direct and the gateway figures differ only by the server.
 */
export interface Timed {
  readonly status: number
  readonly body: string
  readonly ms: number
}

export const keepAliveAgent = () => new Agent({ keepAlive: true, maxSockets: 1 })

/** One request over `agent`, timed with `process.hrtime`. */
export const sendTimed = (
  agent: Agent,
  method: "GET" | "POST",
  url: string,
  headers: Readonly<Record<string, string>>,
  body?: string
) =>
  new Promise<Timed>((resolve, reject) => {
    const started = process.hrtime.bigint()
    const length = body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }
    const req = request(url, { method, agent, headers: { ...headers, ...length } }, (res) => {
      const chunks: Buffer[] = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString("utf8"),
          ms: Number(process.hrtime.bigint() - started) / 1e6
        })
      )
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(body)
  })

export const postTimed = (agent: Agent, url: string, body: string, headers: Readonly<Record<string, string>>) =>
  sendTimed(agent, "POST", url, headers, body)

const PROTOCOL = "2026-07-28"

/** A 2026-07-28 request as the client SDK 2.x sends it: `_meta` envelope plus the standard headers. */
export const modernRequest = (method: string, params: Record<string, unknown>, name?: string) => ({
  body: JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": {}
      }
    }
  }),
  headers: {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL,
    "mcp-method": method,
    ...(name === undefined ? {} : { "mcp-name": name })
  } as Record<string, string>
})

/** A 2025-era request as the client SDKs send it after `initialize`: no envelope, the version header. */
export const legacyRequest = (method: string, params: Record<string, unknown>) => ({
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  headers: {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25"
  } as Record<string, string>
})

// An SSE answer (the SDK's stateless 2025-era serving streams even a lone result): its last data line.
const messageText = (body: string) =>
  body.startsWith("event:") || body.startsWith("data:")
    ? (body
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .at(-1)
        ?.slice(6) ?? "")
    : body

/** The JSON-RPC result of a JSON (or one-event SSE) answer; throws on anything else, so a bench never times errors. */
export const resultOf = (timed: Timed): Record<string, unknown> => {
  if (timed.status !== 200) throw new Error(`HTTP ${timed.status}: ${timed.body.slice(0, 300)}`)
  const message = JSON.parse(messageText(timed.body)) as { readonly result?: Record<string, unknown> }
  if (message.result === undefined) throw new Error(`not a JSON-RPC result: ${timed.body.slice(0, 300)}`)
  return message.result
}
