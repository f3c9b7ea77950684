import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface ScriptedRequest {
  readonly method: string
  readonly path: string
  readonly body: string
}

export interface ScriptedServer {
  readonly origin: string
  /** Every request received, in order. */
  readonly requests: Array<ScriptedRequest>
  readonly close: () => Promise<void>
}

/**
 * A real HTTP server on an ephemeral loopback port whose every answer is written by `answer`: the
 * misbehaving or hostile gateway (metadata, token endpoint, /mcp) that `gateway connect` must withstand.
 */
export const scriptedServer = async (
  answer: (request: ScriptedRequest, response: ServerResponse, origin: string) => void
): Promise<ScriptedServer> => {
  const requests: Array<ScriptedRequest> = []
  let origin = ""
  const server = createServer((incoming: IncomingMessage, response) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const request = {
        method: incoming.method ?? "GET",
        path: incoming.url ?? "/",
        body: Buffer.concat(chunks).toString("utf8")
      }
      requests.push(request)
      answer(request, response, origin)
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    requests,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      })
  }
}

/** Writes `body` as JSON with status `status`. */
export const json = (response: ServerResponse, body: unknown, status = 200) => {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
}

/**
 * The two metadata documents of a gateway at `origin` (RFC 9728 for `/mcp`, RFC 8414 for `/sso`), with
 * `server` replacing members of the authorization server's; `undefined` for any other path.
 */
export const gatewayMetadata = (origin: string, path: string, server: Record<string, unknown> = {}) => {
  if (path === "/.well-known/oauth-protected-resource/mcp") {
    return {
      resource: `${origin}/mcp`,
      authorization_servers: [`${origin}/sso`],
      scopes_supported: ["offline_access"]
    }
  }
  if (path === "/.well-known/oauth-authorization-server/sso") {
    return {
      issuer: `${origin}/sso`,
      authorization_endpoint: `${origin}/sso/authorize`,
      token_endpoint: `${origin}/sso/token`,
      code_challenge_methods_supported: ["S256"],
      scopes_supported: ["offline_access"],
      authorization_response_iss_parameter_supported: true,
      ...server
    }
  }
  return undefined
}
