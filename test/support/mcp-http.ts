import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import { listenRestartable } from "./restartable.js"

/**
 * A real loopback HTTP server around a web-standard handler (the MCP server SDK's `handler.fetch`), for
 * test backends. It records every request's headers, and can stop and start again on the same port
 * (a backend that goes down and comes back).
 */
export interface LoopbackServer {
  readonly port: number
  readonly url: string
  readonly requests: Array<{ readonly method: string; readonly headers: IncomingHttpHeaders; readonly body: string }>
  stop(): Promise<void>
  start(): Promise<void>
}

const toWebRequest = (req: IncomingMessage, body: Buffer, signal: AbortSignal): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value)
    else if (Array.isArray(value)) for (const each of value) headers.append(name, each)
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD"
  return new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`, {
    method: req.method ?? "GET",
    headers,
    signal,
    ...(hasBody ? { body } : {})
  })
}

const writeWebResponse = async (response: Response, res: ServerResponse) => {
  res.writeHead(response.status, Object.fromEntries(response.headers))
  res.flushHeaders()
  if (response.body !== null) for await (const chunk of response.body) res.write(chunk)
  res.end()
}

export const serveLoopback = async (
  handle: (request: Request, raw: IncomingMessage, res: ServerResponse) => Promise<Response | undefined>,
  port = 0
): Promise<LoopbackServer> => {
  const requests: LoopbackServer["requests"] = []
  const create = () => {
    const created = createServer(async (req, res) => {
      const controller = new AbortController()
      res.on("close", () => controller.abort())
      const chunks: Array<Buffer> = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const body = Buffer.concat(chunks)
      requests.push({ method: req.method ?? "", headers: req.headers, body: body.toString("utf8") })
      try {
        const response = await handle(toWebRequest(req, body, controller.signal), req, res)
        if (response !== undefined) await writeWebResponse(response, res)
      } catch {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      }
    })
    created.keepAliveTimeout = 1000
    return created
  }
  const listening = await listenRestartable(create, port)
  return {
    port: listening.port,
    url: `http://127.0.0.1:${listening.port}/mcp`,
    requests,
    stop: listening.stop,
    start: listening.start
  }
}
