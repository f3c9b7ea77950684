/**
 * OAuth client credentials to a backend (issue 3, Backends): the gateway discovers the token endpoint
 * from the issuer's metadata, authenticates with client_secret_basic, and reuses a token until shortly
 * before it expires. A tiny real token endpoint on loopback.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { alphaTools, startBackend, type TestBackend } from "../../support/mcp-backends.js"
import { connectClient } from "../../support/mcp-clients.js"
import { startTestGateway, type TestGateway } from "../../support/mcp-gateway.js"
import { type LoopbackServer, serveLoopback } from "../../support/mcp-http.js"
import { shiftedClock } from "../../support/shifted-clock.js"

let issuer: LoopbackServer
let alpha: TestBackend
let gateway: TestGateway
const issued: Array<string> = []
// Token expiry is measured on the generation's clock: the test moves it instead of waiting.
const time = shiftedClock()

beforeAll(async () => {
  issuer = await serveLoopback(async (request) => {
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
    const token = `tok-${issued.length + 1}-${form.get("scope")}`
    issued.push(token)
    return Response.json({ access_token: token, token_type: "Bearer", expires_in: 2 })
  })
  alpha = await startBackend("alpha", alphaTools)
  const oauth = {
    type: "client_credentials",
    issuer: `http://127.0.0.1:${issuer.port}`,
    client_id: "gw-client",
    client_secret: "s3cret",
    scopes: ["tools"]
  }
  gateway = await startTestGateway({
    clock: time.clock,
    patch: {
      backends: [{ id: "alpha", url: alpha.url, allow_insecure_http: true, oauth, tool_rules: [{ tools: ["*"] }] }]
    }
  })
})
afterAll(async () => {
  await gateway?.close()
  await alpha?.stop()
  await issuer?.stop()
})

it("fetches a client-credentials token once, reuses it, and renews it shortly before expiry", async () => {
  const client = await connectClient(gateway.mcpUrl, await gateway.token())
  const echo = () => client.callTool({ name: "alpha__echo", arguments: { message: "hi" } })
  await echo()
  await echo()
  expect(issued).toEqual(["tok-1-tools"])
  expect(alpha.requests.every((request) => request.headers["authorization"] === "Bearer tok-1-tools")).toBe(true)
  // Lifetime 2 s, renewed when 10% is left: 1.9 s later the next call fetches a new token.
  time.advance(1_900)
  await echo()
  expect(issued).toEqual(["tok-1-tools", "tok-2-tools"])
  expect(alpha.requests.at(-1)?.headers["authorization"]).toBe("Bearer tok-2-tools")
  await client.close()
})
