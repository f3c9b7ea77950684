import { createServer, type IncomingMessage, type Server } from "node:http"

/** Serves a web-standard `Request → Response` handler on node:http (what the demo backend needs, no more). */
export const serveFetch = (
  fetchHandler: (request: Request) => Promise<Response>,
  host: string,
  port: number
): Promise<Server> =>
  new Promise((done, fail) => {
    const server = createServer(async (req, res) => {
      const controller = new AbortController()
      res.on("close", () => controller.abort())
      try {
        const response = await fetchHandler(await toRequest(req, controller.signal))
        res.writeHead(response.status, Object.fromEntries(response.headers))
        if (response.body !== null) for await (const chunk of response.body) res.write(chunk)
        res.end()
      } catch {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      }
    })
    server.once("error", fail)
    server.listen(port, host, () => done(server))
  })

const toRequest = async (req: IncomingMessage, signal: AbortSignal): Promise<Request> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value)
  const body = req.method === "GET" || req.method === "HEAD" ? undefined : Buffer.concat(chunks)
  return new Request(`http://${host(req)}${req.url ?? "/"}`, {
    method: req.method ?? "GET",
    headers,
    signal,
    ...(body === undefined ? {} : { body })
  })
}

const host = (req: IncomingMessage) => req.headers.host ?? "127.0.0.1"
