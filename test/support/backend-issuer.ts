import { type LoopbackServer, serveLoopback } from "./mcp-http.js"

/**
 * A tiny OAuth authorization server for a backend's client credentials (docs/mcp.md, "Backends"):
 * RFC 8414 metadata and a token endpoint that accepts `client_secret_basic` for `gw-client:s3cret` and
 * issues `tok-<n>` tokens, recorded in `issued`. `oauth` is the gateway's `backends[].oauth` for it.
 */
export interface BackendIssuer extends LoopbackServer {
  readonly issued: Array<string>
  readonly oauth: Record<string, unknown>
}

export const startBackendIssuer = async (): Promise<BackendIssuer> => {
  const issued: Array<string> = []
  const loopback = await serveLoopback(async (request) => {
    const { pathname, origin } = new URL(request.url)
    if (pathname === "/.well-known/oauth-authorization-server") {
      return Response.json({
        issuer: origin,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        response_types_supported: ["code"]
      })
    }
    if (pathname !== "/token") return new Response(null, { status: 404 })
    const form = new URLSearchParams(await request.text())
    const basic = `Basic ${Buffer.from("gw-client:s3cret").toString("base64")}`
    if (request.headers.get("authorization") !== basic || form.get("grant_type") !== "client_credentials") {
      return Response.json({ error: "invalid_client" }, { status: 401 })
    }
    const token = `tok-${issued.length + 1}`
    issued.push(token)
    return Response.json({ access_token: token, token_type: "Bearer", expires_in: 3600 })
  })
  const oauth = {
    type: "client_credentials",
    issuer: `http://127.0.0.1:${loopback.port}`,
    client_id: "gw-client",
    client_secret: "s3cret"
  }
  return Object.assign(loopback, { issued, oauth })
}
